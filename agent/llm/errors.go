package llm

import (
	"errors"
	"fmt"
)

// Kind classifies an Error for the ACP error code it maps to.
type Kind int

// Error kinds.
const (
	KindOther    Kind = iota // any other failure (-32000)
	KindAuth                 // 401/403: credentials rejected (-32001)
	KindNotFound             // 404: unknown model or route (-32002)
	// KindContextWindow is a 400 saying the request does not fit the
	// model's context window; the agent can summarise and retry.
	KindContextWindow
	// KindUnreachable is a request that never reached the provider: the
	// connection was refused, the host has no address, or the connect
	// timed out.
	KindUnreachable
)

// Error is a failed completion call. Its text is what the ACP client sees
// after the "llm: " prefix the agent adds.
type Error struct {
	Kind   Kind
	Status int // HTTP status, 0 when none
	Msg    string
	// retryable marks failures that another attempt may cure.
	retryable bool
	// retryAfter is a server-asked delay before the next attempt, 0 if none.
	retryAfter int
}

func (e *Error) Error() string { return e.Msg }

// Retryable reports whether another attempt later may succeed: a transport
// failure, a rate limit or a provider-side (5xx) failure. Rejected
// credentials, an unknown model and other 4xx answers are not.
func (e *Error) Retryable() bool {
	switch {
	case e.retryable, e.Kind == KindUnreachable:
		return true
	case e.Kind == KindAuth, e.Kind == KindNotFound, e.Kind == KindContextWindow:
		return false
	}
	return e.Status >= 500 || e.Status == 429 || e.Status == 499
}

func errorf(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// errIdle is the cause set when no byte arrived within the inactivity timeout.
var errIdle = errors.New("no response bytes within the inactivity timeout")
