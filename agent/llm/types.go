// Package llm talks to the language-model HTTP APIs buzz-agent supports:
// Anthropic Messages, OpenAI Chat Completions and Responses, OpenRouter (Chat
// with its extensions), any OpenAI-compatible base URL, and Databricks with a
// static DATABRICKS_TOKEN. Replies are streamed (SSE) by default, text and
// reasoning deltas are handed to the caller as they arrive, and tool calls
// are assembled from their deltas; a non-streamed mode makes one plain POST
// per round.
//
// It does not keep conversation state, persist anything, run tools or do
// browser OAuth: the caller owns the history and passes it in on every call.
package llm

import (
	"encoding/json"
)

// Role says which kind of history item a Message is.
type Role int

// History item kinds.
const (
	RoleUser      Role = iota // a user prompt, steer or injected reminder
	RoleAssistant             // the model's text plus its tool calls
	RoleTool                  // the result of exactly one tool call
)

// Message is one history item. Which fields matter depends on Role.
type Message struct {
	Role Role
	// Text is the user text or the assistant text. Empty is allowed.
	Text string
	// Calls are the assistant's tool calls, in the provider's order.
	Calls []ToolCall
	// ReasoningDetails is OpenRouter's opaque reasoning array, replayed
	// byte-for-byte on this assistant message. Nil when absent.
	ReasoningDetails json.RawMessage
	// ReasoningContent is a Chat gateway's reasoning_content (DeepSeek),
	// echoed back on this assistant message. Empty when absent.
	ReasoningContent string
	// Thinking holds Anthropic thinking/redacted_thinking blocks verbatim, in
	// order; they lead the assistant message when thinking is requested.
	Thinking []json.RawMessage

	// Result is set for RoleTool and carries the call id it answers.
	Result *ToolResult
	// Images are attached to a RoleUser prompt (ACP image blocks), after
	// its text. Nil for other roles.
	Images []Image
}

// ToolCall is one tool invocation asked for by the model. ID is the
// provider's id and is never empty.
type ToolCall struct {
	ID   string
	Name string
	// Args is a JSON object ("{}" when the model sent none).
	Args json.RawMessage
	// Extra holds every key of the wire tool-call object other than id, type
	// and function (Gemini's thoughtSignature, for one), replayed verbatim.
	Extra map[string]json.RawMessage
}

// ToolResult answers one ToolCall. Its CallID can only come from a call: it
// is built with ToolCall.Result, so a result is paired with its call by
// construction.
type ToolResult struct {
	CallID  string
	Parts   []Part
	IsError bool
}

// Result returns the history item that answers c.
func (c ToolCall) Result(parts []Part, isError bool) Message {
	return Message{Role: RoleTool, Result: &ToolResult{CallID: c.ID, Parts: parts, IsError: isError}}
}

// Part is one piece of a tool result: text, or an image when Image is set.
type Part struct {
	Text  string
	Image *Image
}

// Image is base64 image data with its MIME type.
type Image struct {
	Data string
	MIME string
}

// User returns a user history item.
func User(text string) Message { return Message{Role: RoleUser, Text: text} }

// Tool is one function the model may call.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the arguments; "{}" when unknown.
	Schema json.RawMessage
}

// Stop is the provider's reason for ending a reply, normalised.
type Stop int

// Normalised stop reasons.
const (
	StopOther Stop = iota
	StopEndTurn
	StopToolUse
	StopMaxTokens
	StopRefusal
)

func (s Stop) String() string {
	switch s {
	case StopEndTurn:
		return "end_turn"
	case StopToolUse:
		return "tool_use"
	case StopMaxTokens:
		return "max_tokens"
	case StopRefusal:
		return "refusal"
	}
	return "other"
}

// mapStop normalises a wire stop/finish reason.
func mapStop(s string) Stop {
	switch s {
	case "end_turn", "stop":
		return StopEndTurn
	case "tool_use", "tool_calls":
		return StopToolUse
	case "max_tokens", "length":
		return StopMaxTokens
	case "refusal", "content_filter":
		return StopRefusal
	}
	return StopOther
}

// Usage is what a provider reported about one request. A nil field was not
// reported (unknown, not zero).
type Usage struct {
	Input  *uint64 // inclusive of cached input
	Output *uint64
	Cached *uint64
	Total  *uint64
}

// Any reports whether input or output was reported.
func (u Usage) Any() bool { return u.Input != nil || u.Output != nil }

// Request is one completion call.
type Request struct {
	Model    string
	System   string
	Messages []Message
	Tools    []Tool
	// OnText receives assistant text deltas as they arrive when streaming
	// (the whole text once when not). Nil drops them.
	OnText func(string)
	// OnThought receives reasoning deltas like OnText.
	OnThought func(string)
}

// Response is the assembled reply of one completion call.
type Response struct {
	Text             string
	Reasoning        string
	Calls            []ToolCall
	Stop             Stop
	Usage            Usage
	ReasoningDetails json.RawMessage
	ReasoningContent string
	Thinking         []json.RawMessage
	// Streamed reports whether text and reasoning already went out through
	// OnText/OnThought.
	Streamed bool
}

// Assistant returns the history item for r.
func (r *Response) Assistant(calls []ToolCall) Message {
	return Message{
		Role: RoleAssistant, Text: r.Text, Calls: calls,
		ReasoningDetails: r.ReasoningDetails, ReasoningContent: r.ReasoningContent,
		Thinking: r.Thinking,
	}
}
