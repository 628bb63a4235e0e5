package relayclient

import (
	"errors"
	"fmt"
	"net/http"

	"buzzbox/internal/workspace"
)

// Categories of Error, frozen: the buzz CLI prints them as the "error"
// field of its JSON error line and callers parse them.
const (
	CatUser            = "user_error"       // the caller's input (a relay URL) is wrong
	CatNotFound        = "not_found"        // what the caller named is not there (or not theirs to see)
	CatRelay           = "relay_error"      // the relay refused the request
	CatNetwork         = "network_error"    // the relay could not be reached or the connection broke
	CatDeliveryUnknown = "delivery_unknown" // a write may or may not have been stored
	CatAuth            = "auth_error"       // the relay refused our key or attestation
	CatOther           = "error"            // anything else
)

// Error is a classified failure of a relay operation. Its Message is the
// text the CLI prints; Retryable says whether the same call may succeed
// later.
type Error struct {
	Category  string
	Message   string
	Retryable bool
}

func (e *Error) Error() string { return e.Message }

// Retryable reports whether err is an *Error that says retrying may help.
func Retryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

// ErrNoBridge means the relay has no HTTP bridge (or no such route): use
// the websocket.
var ErrNoBridge = errors.New("relay has no HTTP bridge")

// staleAuthTagHint is appended to a bridge 403 while an auth tag is
// configured.
const staleAuthTagHint = " (" + workspace.EnvAuthTag + " is set — it may be stale or revoked; try unsetting it)"

func otherErr(format string, a ...any) *Error {
	return &Error{Category: CatOther, Message: fmt.Sprintf(format, a...)}
}

func userErr(format string, a ...any) *Error {
	return &Error{Category: CatUser, Message: fmt.Sprintf(format, a...)}
}

// authErr is a refusal of our identity: "auth error: …".
func authErr(format string, a ...any) *Error {
	return &Error{Category: CatAuth, Message: "auth error: " + fmt.Sprintf(format, a...)}
}

// relayErr renders a relay's refusal: "relay error <status>: <text>".
// Refusal is the error of an HTTP answer of status with text (the
// relay's reason), classified by the status: 401 and 403 auth, 404 not
// found, 409 and 413 the caller's, the rest the relay's.
func Refusal(status int, text string) *Error {
	e := &Error{Category: CatRelay, Message: fmt.Sprintf("%s (HTTP %d)", text, status)}
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		e.Category = CatAuth
	case http.StatusNotFound:
		e.Category = CatNotFound
	case http.StatusConflict, http.StatusRequestEntityTooLarge:
		e.Category = CatUser
	}
	return e
}

func relayErr(status int, text string, retryable bool) *Error {
	return &Error{Category: CatRelay, Message: fmt.Sprintf("relay error %d: %s", status, text), Retryable: retryable}
}

func networkErr(format string, a ...any) *Error {
	return &Error{Category: CatNetwork, Message: "network error: " + fmt.Sprintf(format, a...), Retryable: true}
}
