// Package acp holds the Agent Client Protocol (ACP v1) wire types that both
// sides of buzzbox share: the agent (buzz-agent) and the harness's client.
// Field names and method names are spelled as on the wire. Decoding is
// lenient: unknown fields are ignored, since real clients send newer ones.
//
// It holds data shapes only: no connection, no framing (see
// internal/jsonrpc) and no behaviour.
package acp

import "encoding/json"

// ProtocolVersion is the ACP protocol version this code speaks.
const ProtocolVersion = 1

// Method names.
const (
	MethodInitialize    = "initialize"
	MethodSessionNew    = "session/new"
	MethodSessionPrompt = "session/prompt"
	MethodSessionCancel = "session/cancel"
	MethodSessionLoad   = "session/load"
	MethodSessionList   = "session/list"
	MethodSessionResume = "session/resume"
	MethodSetModel      = "session/set_model"
	MethodSessionUpdate = "session/update"
	MethodSessionClose  = "session/close"
	MethodSetConfig     = "session/set_config_option"
	MethodPermission    = "session/request_permission" // agent → client
	MethodAuthenticate  = "authenticate"
	// MethodSteering is a non-cancelling steer of a running prompt
	// (advertised as _meta.steering.supported in initialize).
	MethodSteering = "_session/steering"
	// MethodGooseSystemPrompt sets a goose session's system prompt.
	MethodGooseSystemPrompt = "_goose/unstable/session/system-prompt/set"
	MethodSteer             = "_goose/unstable/session/steer"
	MethodUsageUpdate       = "_goose/unstable/session/update"
)

// InitializeParams is the initialize request. ACP v2 renames
// clientCapabilities to capabilities and clientInfo to info; both are read.
type InitializeParams struct {
	ProtocolVersion    *uint16         `json:"protocolVersion"`
	ClientCapabilities json.RawMessage `json:"clientCapabilities,omitempty"`
	ClientInfo         *Implementation `json:"clientInfo,omitempty"`
	Capabilities       json.RawMessage `json:"capabilities,omitempty"`
	Info               *Implementation `json:"info,omitempty"`
}

// GooseNotifications reports whether the client opted in to goose's custom
// notifications (_goose/unstable/…): capabilities (v2) or
// clientCapabilities (v1) carrying _meta.goose.customNotifications = true.
func (p InitializeParams) GooseNotifications() bool {
	for _, raw := range []json.RawMessage{p.Capabilities, p.ClientCapabilities} {
		var c struct {
			Meta struct {
				Goose struct {
					CustomNotifications bool `json:"customNotifications"`
				} `json:"goose"`
			} `json:"_meta"`
		}
		if len(raw) > 0 && json.Unmarshal(raw, &c) == nil && c.Meta.Goose.CustomNotifications {
			return true
		}
	}
	return false
}

// Implementation names a program.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Title   string `json:"title,omitempty"`
}

// InitializeResult is the agent's answer to initialize.
type InitializeResult struct {
	ProtocolVersion   uint16            `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []json.RawMessage `json:"authMethods"`
	AgentInfo         *Implementation   `json:"agentInfo,omitempty"`
}

// AgentCapabilities says what the agent supports; every marker is explicit.
type AgentCapabilities struct {
	LoadSession        bool               `json:"loadSession"`
	PromptCapabilities PromptCapabilities `json:"promptCapabilities"`
	MCPCapabilities    MCPCapabilities    `json:"mcpCapabilities"`
	// SessionCapabilities lists the optional session methods beyond load;
	// nil offers none.
	SessionCapabilities *SessionCapabilities `json:"sessionCapabilities,omitempty"`
}

// SessionCapabilities marks optional session methods; a non-nil field
// (an empty object on the wire) offers the method.
type SessionCapabilities struct {
	List   *struct{} `json:"list,omitempty"`
	Resume *struct{} `json:"resume,omitempty"`
}

// PromptCapabilities lists the optional prompt content types accepted.
type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

// MCPCapabilities lists the MCP transports the agent can attach besides stdio.
type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// NameValue is an env or header entry: a list of these, not a map.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MCPServer is one entry of session/new's mcpServers. Type is empty or
// "stdio" for a child process (Command, Args, Env), "http" for Streamable
// HTTP (URL, Headers), "sse" for the old HTTP+SSE transport.
type MCPServer struct {
	Type    string      `json:"type,omitempty"`
	Name    string      `json:"name"`
	Command string      `json:"command,omitempty"`
	Args    []string    `json:"args,omitempty"`
	Env     []NameValue `json:"env,omitempty"`
	URL     string      `json:"url,omitempty"`
	Headers []NameValue `json:"headers,omitempty"`
}

// NewSessionParams is the session/new request. SystemPrompt is a
// buzz-agent extension that replaces the configured system prompt.
type NewSessionParams struct {
	Cwd          string      `json:"cwd"`
	MCPServers   []MCPServer `json:"mcpServers"`
	SystemPrompt string      `json:"systemPrompt,omitempty"`
}

// LoadSessionParams is the session/load request, and session/resume's,
// which adds ReplayFrom: nil resumes without replaying the history,
// {"type":"start"} replays all of it. SystemPrompt is the buzz-agent
// extension of session/new; empty keeps the prompt the session had.
type LoadSessionParams struct {
	SessionID    string      `json:"sessionId"`
	Cwd          string      `json:"cwd"`
	MCPServers   []MCPServer `json:"mcpServers"`
	SystemPrompt string      `json:"systemPrompt,omitempty"`
	ReplayFrom   *ReplayFrom `json:"replayFrom,omitempty"`
}

// ReplayFrom is where session/resume starts replaying history.
type ReplayFrom struct {
	Type string `json:"type"`
}

// LoadSessionResult answers session/load and session/resume.
type LoadSessionResult struct {
	Models *ModelInfo `json:"models,omitempty"`
}

// ListSessionsParams is the session/list request: Cwd, when set, keeps
// only sessions of that directory; Cursor is a nextCursor from before.
type ListSessionsParams struct {
	Cwd    string `json:"cwd,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// ListSessionsResult answers session/list, newest first.
type ListSessionsResult struct {
	Sessions   []SessionInfo `json:"sessions"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// SessionInfo describes one stored session. UpdatedAt is RFC 3339.
type SessionInfo struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
}

// NewSessionResult answers session/new.
type NewSessionResult struct {
	SessionID string     `json:"sessionId"`
	Models    *ModelInfo `json:"models,omitempty"`
}

// ModelInfo is the legacy (unstable) model list some clients read.
type ModelInfo struct {
	CurrentModelID  string  `json:"currentModelId"`
	AvailableModels []Model `json:"availableModels"`
}

// Model is one selectable model.
type Model struct {
	ModelID string `json:"modelId"`
	Name    string `json:"name"`
}

// ContentBlock is a prompt or update content block. Only the fields of the
// block's type are set.
type ContentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// TextBlock returns a text content block.
func TextBlock(s string) ContentBlock { return ContentBlock{Type: "text", Text: s} }

// PromptParams is the session/prompt request.
type PromptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

// StopReason ends a prompt turn.
type StopReason string

// Stop reasons (frozen wire strings).
const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

// PromptResult answers session/prompt.
type PromptResult struct {
	StopReason StopReason `json:"stopReason"`
	// MessageID is v2's answer when the prompt's message is in; the end
	// of the work then comes as an idle state_update.
	MessageID string `json:"messageId,omitempty"`
}

// CancelParams is session/cancel.
type CancelParams struct {
	SessionID string `json:"sessionId"`
}

// SessionNotification is the params of session/update.
type SessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    Update `json:"update"`
}

// Update kinds (update.sessionUpdate).
const (
	UpdateUserMessageChunk  = "user_message_chunk"
	UpdateAgentMessageChunk = "agent_message_chunk"
	UpdateAgentThoughtChunk = "agent_thought_chunk"
	UpdateToolCall          = "tool_call"
	UpdateToolCallUpdate    = "tool_call_update"
	UpdateSessionInfo       = "session_info_update"
	UpdateUsage             = "usage_update"
	UpdateKeepalive         = "keepalive"
	// UpdateState is ACP v2's report of a session running or idle (with
	// the stop reason).
	UpdateState = "state_update"
)

// Tool call statuses.
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
)

// Update is one session/update payload; fields not used by its kind are
// left empty and omitted.
type Update struct {
	SessionUpdate string            `json:"sessionUpdate"`
	Content       *ContentBlock     `json:"content,omitempty"`
	MessageID     string            `json:"messageId,omitempty"`
	ToolCallID    string            `json:"toolCallId,omitempty"`
	Title         string            `json:"title,omitempty"`
	Kind          string            `json:"kind,omitempty"`
	Status        string            `json:"status,omitempty"`
	RawInput      json.RawMessage   `json:"rawInput,omitempty"`
	RawOutput     any               `json:"rawOutput,omitempty"`
	ToolContent   []ToolCallContent `json:"-"`
	Meta          any               `json:"_meta,omitempty"`
	// State is state_update's (v2) "running" or "idle"; an idle one
	// carries how the work ended in StopReason and, for "error", the
	// JSON-RPC error object in Error.
	State      string          `json:"state,omitempty"`
	StopReason *string         `json:"stopReason,omitempty"`
	Error      json.RawMessage `json:"error,omitempty"`
}

// ToolCallContent is one item of a tool call's content.
type ToolCallContent struct {
	Type    string        `json:"type"`
	Content *ContentBlock `json:"content,omitempty"`
}

// MarshalJSON writes a tool call's content list under "content", where the
// message chunk kinds put a single block.
func (u Update) MarshalJSON() ([]byte, error) {
	type plain Update
	if u.ToolContent == nil {
		return json.Marshal(plain(u))
	}
	return json.Marshal(struct {
		plain
		Content []ToolCallContent `json:"content"`
	}{plain(u), u.ToolContent})
}
