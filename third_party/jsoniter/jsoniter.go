// Package jsoniter stands in for github.com/json-iterator/go, which
// go-nostr uses only as a faster encoding/json. It offers the part of that
// API go-nostr calls, on top of encoding/json.
//
// Why: json-iterator's reflect2 dependency wraps reflect.Type.MethodByName
// with a non-constant name. Linked together with protobuf (through
// badger), that turns off the linker's dead-method elimination for the
// whole executable, which then carries every exported method of every
// type: several megabytes, and milliseconds of start-up for every
// identity. See DEVELOPERS.md.
package jsoniter

import (
	"bytes"
	"encoding/json"
	"io"
)

// RawMessage is a raw encoded JSON value.
type RawMessage = json.RawMessage

// API is the subset of json-iterator's configuration interface in use.
type API interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
	MarshalToString(v any) (string, error)
	UnmarshalFromString(s string, v any) error
	NewEncoder(w io.Writer) *Encoder
	NewDecoder(r io.Reader) *Decoder
}

// Config mirrors the options of json-iterator's configurations that
// change encoded output.
type Config struct {
	EscapeHTML bool
}

// Froze returns the API for c.
func (c Config) Froze() API { return config{escapeHTML: c.EscapeHTML} }

var (
	// ConfigDefault escapes HTML like encoding/json.
	ConfigDefault = Config{EscapeHTML: true}.Froze()
	// ConfigCompatibleWithStandardLibrary is encoding/json.
	ConfigCompatibleWithStandardLibrary = Config{EscapeHTML: true}.Froze()
	// ConfigFastest does not escape HTML, as in json-iterator.
	ConfigFastest = Config{EscapeHTML: false}.Froze()
)

type config struct{ escapeHTML bool }

func (c config) Marshal(v any) ([]byte, error) {
	if c.escapeHTML {
		return json.Marshal(v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (c config) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func (c config) MarshalToString(v any) (string, error) {
	b, err := c.Marshal(v)
	return string(b), err
}

func (c config) UnmarshalFromString(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func (c config) NewEncoder(w io.Writer) *Encoder {
	e := json.NewEncoder(w)
	e.SetEscapeHTML(c.escapeHTML)
	return &Encoder{e}
}

func (c config) NewDecoder(r io.Reader) *Decoder { return &Decoder{json.NewDecoder(r)} }

// Encoder writes JSON values to a stream.
type Encoder struct{ *json.Encoder }

// Decoder reads JSON values from a stream.
type Decoder struct{ *json.Decoder }

// NewEncoder is ConfigDefault.NewEncoder.
func NewEncoder(w io.Writer) *Encoder { return ConfigDefault.NewEncoder(w) }

// NewDecoder is ConfigDefault.NewDecoder.
func NewDecoder(r io.Reader) *Decoder { return ConfigDefault.NewDecoder(r) }

// Marshal is ConfigDefault.Marshal.
func Marshal(v any) ([]byte, error) { return ConfigDefault.Marshal(v) }

// Unmarshal is ConfigDefault.Unmarshal.
func Unmarshal(data []byte, v any) error { return ConfigDefault.Unmarshal(data, v) }
