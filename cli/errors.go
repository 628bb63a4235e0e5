package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"buzzbox/internal/workspace/relayclient"
)

// Error categories, frozen: callers parse them from the JSON error line.
// The relay client's are its own.
const (
	catUser            = relayclient.CatUser
	catNotFound        = relayclient.CatNotFound
	catRelay           = relayclient.CatRelay
	catNetwork         = relayclient.CatNetwork
	catDeliveryUnknown = relayclient.CatDeliveryUnknown
	catAuth            = relayclient.CatAuth
	catKey             = "key_error"
	catOther           = relayclient.CatOther
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

// Error is a failure reported to the caller as one JSON line on stderr:
// the relay client's classified error, and the CLI's own.
type Error = relayclient.Error

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
