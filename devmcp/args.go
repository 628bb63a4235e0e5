package devmcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// decodeArgs decodes a tools/call arguments object into dst, a pointer to a
// struct. Absent or null arguments decode as an empty object. Failures are
// tool errors, so the model sees what to fix. With strict set, unknown
// fields are refused too.
func decodeArgs(raw json.RawMessage, dst any, strict bool) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' {
		return toolErrorf("invalid arguments: expected an object, got %s", jsonKind(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		return toolErrorf("invalid arguments: %s", describeDecodeError(err))
	}
	return nil
}

// describeDecodeError rewrites encoding/json's messages, which name Go
// types, in terms of the JSON the model wrote.
func describeDecodeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "arguments"
		}
		return fmt.Sprintf("%q must be %s, got %s", field, jsonTypeName(te.Type), te.Value)
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown field " + rest + " (this tool accepts no other fields)"
	}
	return strings.TrimPrefix(msg, "json: ")
}

// jsonTypeName names the JSON form of a Go type.
func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// jsonKind names the kind of a raw JSON value by its first byte.
func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// missing returns the tool error for an absent required argument.
func missing(name string) error {
	return toolErrorf("invalid arguments: missing required field %q", name)
}

// nonNegative checks an optional integer argument.
func nonNegative(name string, v *int64) error {
	if v != nil && *v < 0 {
		return toolErrorf("invalid arguments: %q must be >= 0, got %d", name, *v)
	}
	return nil
}
