// Package jsonrpc is the JSON-RPC 2.0 core shared by every stdio protocol in
// buzzbox: MCP (server and client) and ACP (agent and client).
//
// Framing is newline-delimited JSON, one value per line, as both the MCP
// stdio transport and ACP require. Each inbound line is bounded by
// Options.MaxLineBytes; what happens past the bound is the caller's choice
// (answer and keep serving, or end the connection).
//
// A Conn has one reader (Serve) and one writer lock, so frames never
// interleave. Incoming requests each run on their own goroutine with a
// context that is cancelled when the connection ends or CancelRequest names
// them; incoming notifications run in arrival order on the reader goroutine,
// so a cancel is never reordered before the request it cancels. Outgoing
// requests (Call) are matched to responses by id; a frame with an id and no
// method that answers no request sent on the connection is answered
// InvalidRequest (unless it carries an error, which is never answered).
//
// Writes never block a caller past its ctx (Call, NotifyContext): a peer
// that stops reading holds only the frame being written. Options.WriteTimeout
// bounds that write too, and ends the connection when it expires.
//
// The package does not know any method names, does not implement batches
// (removed from MCP in 2025-06-18; a batch is answered with -32600), and does
// not start or stop processes.
package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Version is the only "jsonrpc" member value accepted and sent.
const Version = "2.0"

// Standard error codes (JSON-RPC 2.0 §5.1).
const (
	ParseError     = -32700 // invalid JSON was received
	InvalidRequest = -32600 // the JSON sent is not a valid request object
	MethodNotFound = -32601 // the method does not exist or is not available
	InvalidParams  = -32602 // invalid method parameters
	InternalError  = -32603 // internal JSON-RPC error
)

// Error is a JSON-RPC error object. Data is omitted when nil.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrNoReply, returned by a Handler for a request, sends no response at all.
// MCP asks that a cancelled request get none.
var ErrNoReply = errors.New("jsonrpc: no reply")

// ErrClosed is returned by Call and Notify once the connection has ended.
var ErrClosed = errors.New("jsonrpc: connection closed")

// Request is an incoming request or notification.
type Request struct {
	// ID is the raw request id (a JSON string or number); nil for a notification.
	ID json.RawMessage
	// Method is the method name.
	Method string
	// Params is the raw params member; nil when absent.
	Params json.RawMessage
}

// IsNotification reports whether the request expects no response.
func (r *Request) IsNotification() bool { return r.ID == nil }

// wire is every member a JSON-RPC message may carry.
type wire struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// nullID is the id of an error reply to a message whose id is unknown.
var nullID = json.RawMessage("null")

// response is the wire form of a reply; Result is kept even when empty so a
// success always carries "result".
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// validID reports whether raw is a JSON string or number, the only id forms
// JSON-RPC allows here (MCP forbids null).
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		return true
	}
	return false
}
