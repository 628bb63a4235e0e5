package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Error categories, frozen: callers parse them from the JSON error line.
const (
	catUser            = "user_error"
	catNotFound        = "not_found"
	catRelay           = "relay_error"
	catNetwork         = "network_error"
	catDeliveryUnknown = "delivery_unknown"
	catAuth            = "auth_error"
	catKey             = "key_error"
	catOther           = "error"
	catConflict        = "conflict"
)

// Exit codes of spec §6.3.
const (
	exitOK       = 0
	exitUser     = 1
	exitRelay    = 2
	exitAuth     = 3
	exitOther    = 4
	exitConflict = 5
)

// Error is a failure reported to the caller as one JSON line on stderr.
type Error struct {
	Category  string
	Message   string
	Retryable bool
}

func (e *Error) Error() string { return e.Message }

// exitCode maps a category to the spec's exit status.
func exitCode(category string) int {
	switch category {
	case catUser, catNotFound:
		return exitUser
	case catRelay, catNetwork, catDeliveryUnknown:
		return exitRelay
	case catAuth, catKey:
		return exitAuth
	case catConflict:
		return exitConflict
	}
	return exitOther
}

func userErr(format string, a ...any) *Error {
	return &Error{Category: catUser, Message: fmt.Sprintf(format, a...)}
}

func notFound(format string, a ...any) *Error {
	return &Error{Category: catNotFound, Message: fmt.Sprintf(format, a...)}
}

func otherErr(format string, a ...any) *Error {
	return &Error{Category: catOther, Message: fmt.Sprintf(format, a...)}
}

func authErr(format string, a ...any) *Error {
	return &Error{Category: catAuth, Message: "auth error: " + fmt.Sprintf(format, a...)}
}

// relayErr renders a relay's refusal: `relay error <status>: <text>`.
func relayErr(status int, text string, retryable bool) *Error {
	return &Error{Category: catRelay, Message: fmt.Sprintf("relay error %d: %s", status, text), Retryable: retryable}
}

// asError turns any error into the reported shape: ours pass through,
// anything else is category "error".
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Category: catOther, Message: err.Error()}
}

// writeError prints the one-line JSON error.
func writeError(w io.Writer, e *Error) {
	b, _ := json.Marshal(struct {
		Error     string `json:"error"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	}{e.Category, e.Message, e.Retryable})
	w.Write(append(b, '\n'))
}
