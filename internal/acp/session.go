package acp

import (
	"encoding/json"
	"errors"
)

// ClientCapabilities is what a client offers in initialize (v1
// clientCapabilities, v2 capabilities).
type ClientCapabilities struct {
	Auth *AuthCapabilities `json:"auth,omitempty"`
	Meta *ClientMeta       `json:"_meta,omitempty"`
}

// AuthCapabilities says how the client can help an agent log in.
type AuthCapabilities struct {
	Terminal bool `json:"terminal"` // the client can run an agent's terminal login
}

// ClientMeta holds the client's capability extensions.
type ClientMeta struct {
	Goose        *GooseCapabilities `json:"goose,omitempty"`
	TerminalAuth bool               `json:"terminal-auth,omitempty"` // the older spelling of auth.terminal
}

// GooseCapabilities opts in to goose's extensions.
type GooseCapabilities struct {
	CustomNotifications bool `json:"customNotifications"` // _goose/unstable/… notifications
}

// InitializeRequest is initialize as a client sends it. A client that
// offers both versions sends both pairs of names (v2 info and
// capabilities, v1 clientInfo and clientCapabilities): an agent reads the
// pair of the version it picks. InitializeParams is the agent's reading.
type InitializeRequest struct {
	ProtocolVersion    int                 `json:"protocolVersion"`
	Info               *Implementation     `json:"info,omitempty"`
	Capabilities       *ClientCapabilities `json:"capabilities,omitempty"`
	ClientInfo         *Implementation     `json:"clientInfo,omitempty"`
	ClientCapabilities *ClientCapabilities `json:"clientCapabilities,omitempty"`
}

// SystemPrompt is session/new's systemPrompt as a client sends it: Text
// alone is the plain string (buzz-agent's extension, ACP v2); with Mode
// it is the session systemPrompt capability's {mode, content}.
type SystemPrompt struct {
	Text string
	Mode string // "append" or "override"; "" sends Text as a string
}

// MarshalJSON writes the string or the {mode, content} object.
func (p SystemPrompt) MarshalJSON() ([]byte, error) {
	if p.Mode == "" {
		return json.Marshal(p.Text)
	}
	return json.Marshal(struct {
		Mode    string         `json:"mode"`
		Content []ContentBlock `json:"content"`
	}{p.Mode, []ContentBlock{TextBlock(p.Text)}})
}

// UnmarshalJSON reads either form.
func (p *SystemPrompt) UnmarshalJSON(b []byte) error {
	if json.Unmarshal(b, &p.Text) == nil {
		p.Mode = ""
		return nil
	}
	var o struct {
		Mode    string         `json:"mode"`
		Content []ContentBlock `json:"content"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return errors.New("systemPrompt is neither a string nor {mode, content}")
	}
	p.Mode, p.Text = o.Mode, ""
	for _, c := range o.Content {
		p.Text += c.Text
	}
	return nil
}

// SessionMeta is session/new's _meta as buzz-acp sends it.
type SessionMeta struct {
	SessionTitle string `json:"sessionTitle,omitempty"`
	// SystemPrompt is the Claude Code adapters' {append}, which keeps
	// their own preset.
	SystemPrompt *AppendPrompt `json:"systemPrompt,omitempty"`
}

// AppendPrompt is text appended to an agent's own system prompt.
type AppendPrompt struct {
	Append string `json:"append"`
}

// StdioServer is an mcpServers entry for a stdio server as a client sends
// it: every field present, since some agents' schemas require args and
// env. Type is "stdio" for an ACP v2 agent, which tells transports apart by
// it; v1 knows stdio servers by the absence of a type.
type StdioServer struct {
	Type    string      `json:"type,omitempty"`
	Name    string      `json:"name"`
	Command string      `json:"command"`
	Args    []string    `json:"args"`
	Env     []NameValue `json:"env"`
}

// NewSessionRequest is session/new (and, with SessionID, session/load) as
// a client sends it; NewSessionParams is buzz-agent's reading.
type NewSessionRequest struct {
	SessionID    string        `json:"sessionId,omitempty"` // session/load only
	Cwd          string        `json:"cwd"`
	MCPServers   []StdioServer `json:"mcpServers"`
	SystemPrompt *SystemPrompt `json:"systemPrompt,omitempty"`
	Meta         *SessionMeta  `json:"_meta,omitempty"`
}

// NewSessionReply is what a client reads of a session/new or
// session/load answer.
type NewSessionReply struct {
	SessionID     string         `json:"sessionId"`
	ConfigOptions []ConfigOption `json:"configOptions"`
	Modes         *SessionModes  `json:"modes"`
	Models        *ModelInfo     `json:"models"`
}

// ConfigOption is one select of a session's configOptions. Older agents
// name it by id, newer ones by configId too.
type ConfigOption struct {
	ID           string              `json:"id"`
	ConfigID     string              `json:"configId,omitempty"`
	Name         string              `json:"name,omitempty"`
	Category     string              `json:"category,omitempty"`
	CurrentValue json.RawMessage     `json:"currentValue,omitempty"`
	Options      []ConfigOptionValue `json:"options"`
}

// Key is the name set_config_option takes: configId, else id.
func (o ConfigOption) Key() string {
	if o.ConfigID != "" {
		return o.ConfigID
	}
	return o.ID
}

// ConfigOptionValue is one value a select offers.
type ConfigOptionValue struct {
	Value string `json:"value"`
	Name  string `json:"name,omitempty"`
}

// SessionModes is the legacy modes list.
type SessionModes struct {
	CurrentModeID  string        `json:"currentModeId,omitempty"`
	AvailableModes []SessionMode `json:"availableModes"`
}

// SessionMode is one mode an agent offers.
type SessionMode struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// SetConfigOptionParams is session/set_config_option. Type is "id" under
// v2, which tags a select's value; v1 takes the value bare (Type "").
type SetConfigOptionParams struct {
	SessionID string `json:"sessionId"`
	ConfigID  string `json:"configId"`
	Value     string `json:"value"`
	Type      string `json:"type,omitempty"`
}

// SetModelParams is session/set_model.
type SetModelParams struct {
	SessionID string `json:"sessionId"`
	ModelID   string `json:"modelId"`
}

// GooseSystemPromptParams is goose's system-prompt extension: Text is
// appended (Mode "append") under Key.
type GooseSystemPromptParams struct {
	SessionID string `json:"sessionId"`
	Mode      string `json:"mode"`
	Key       string `json:"key"`
	Text      string `json:"text"`
}

// SessionParams is a request that names only a session: session/close.
type SessionParams struct {
	SessionID string `json:"sessionId"`
}

// SteerParams is goose's steer (ExpectedRunID set) and _session/steering
// (ExpectedRunID empty): more prompt for a running turn.
type SteerParams struct {
	SessionID     string         `json:"sessionId"`
	ExpectedRunID string         `json:"expectedRunId,omitempty"`
	Prompt        []ContentBlock `json:"prompt"`
}

// SteeringResult answers _session/steering: "injected" or
// "startedNewTurn" when the steer was taken.
type SteeringResult struct {
	Outcome string `json:"outcome"`
}

// AuthenticateParams is authenticate.
type AuthenticateParams struct {
	MethodID string `json:"methodId"`
}

// AuthMethod is one entry of initialize's authMethods.
type AuthMethod struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// PermissionRequest is session/request_permission (agent → client).
type PermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  json.RawMessage    `json:"toolCall,omitempty"`
	Options   []PermissionOption `json:"options"`
	Meta      *PermissionMeta    `json:"_meta,omitempty"`
	// Title and Subject are v2's form: what is asked, and the tool call
	// under subject.toolCall rather than at the top.
	Title   string             `json:"title,omitempty"`
	Subject *PermissionSubject `json:"subject,omitempty"`
}

// PermissionSubject is what a v2 permission request is about.
type PermissionSubject struct {
	Type     string          `json:"type"`
	ToolCall json.RawMessage `json:"toolCall,omitempty"`
}

// PermissionMeta is a permission request's _meta. Rule is set by
// buzz-agent when one of its approval rules (not the agent's own
// judgement) raised the request: the pattern the command matched.
type PermissionMeta struct {
	Rule string `json:"buzzApprovalRule,omitempty"`
}

// PermissionOption is one answer a permission request offers. Kind is
// allow_once, allow_always, reject_once or reject_always.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name,omitempty"`
	Kind     string `json:"kind"`
}

// PermissionResponse answers a permission request.
type PermissionResponse struct {
	Outcome PermissionOutcome `json:"outcome"`
}

// PermissionOutcome is "selected" with the option's id, or "cancelled".
type PermissionOutcome struct {
	Outcome  string `json:"outcome"`
	OptionID string `json:"optionId,omitempty"`
}

// SessionInfoNotification is a session_info_update as a client reads it,
// for goose's _meta.goose.activeRunId.
type SessionInfoNotification struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		Meta struct {
			Goose *GooseRun `json:"goose"`
		} `json:"_meta"`
	} `json:"update"`
}

// GooseRun names goose's running prompt; ActiveRunID nil means none runs.
type GooseRun struct {
	ActiveRunID *string `json:"activeRunId"`
}

// UsageNotification is a usage_update (goose's
// _goose/unstable/session/update, or session/update) as a client reads it.
type UsageNotification struct {
	SessionID string      `json:"sessionId"`
	Update    UsageUpdate `json:"update"`
}

// UsageUpdate is a session's cumulative token counters; nil is not
// reported.
type UsageUpdate struct {
	SessionUpdate string   `json:"sessionUpdate"`
	Input         *int64   `json:"accumulatedInputTokens"`
	Output        *int64   `json:"accumulatedOutputTokens"`
	Total         *int64   `json:"accumulatedTotalTokens"`
	Cached        *int64   `json:"accumulatedCachedInputTokens"`
	Cost          *float64 `json:"accumulatedCost"`
	Model         string   `json:"model"`
}

// InitializeReply is what a client reads of an initialize answer, under
// both versions' names: v2 info and capabilities (capabilities.session),
// v1 agentInfo (or the older serverInfo) and agentCapabilities
// (agentCapabilities.sessionCapabilities). InitializeResult is what
// buzz-agent writes.
type InitializeReply struct {
	ProtocolVersion   *int                `json:"protocolVersion"` // nil: 1
	Info              *Implementation     `json:"info"`
	AgentInfo         *Implementation     `json:"agentInfo"`
	ServerInfo        *Implementation     `json:"serverInfo"`
	Capabilities      AgentCapabilitiesV2 `json:"capabilities"`
	AgentCapabilities AgentCapabilitiesV1 `json:"agentCapabilities"`
	AuthMethods       []json.RawMessage   `json:"authMethods"`
	Meta              InitializeReplyMeta `json:"_meta"`
}

// AgentCapabilitiesV2 is v2's capabilities as a client reads them.
type AgentCapabilitiesV2 struct {
	Session *SessionMarkers `json:"session"`
	// Prompt marks the optional prompt content types. The v2 draft names
	// none yet; buzz-agent writes {"image": {}}, in v2's marker style.
	Prompt *PromptMarkers `json:"prompt"`
}

// PromptMarkers are optional prompt content types as markers.
type PromptMarkers struct {
	Image json.RawMessage `json:"image"`
}

// AgentCapabilitiesV1 is v1's agentCapabilities as a client reads them.
type AgentCapabilitiesV1 struct {
	LoadSession         bool               `json:"loadSession"`
	SessionCapabilities *SessionMarkers    `json:"sessionCapabilities"`
	PromptCapabilities  PromptCapabilities `json:"promptCapabilities"`
}

// SessionMarkers are optional session methods as markers a client tests
// for presence (an object, not null or false).
type SessionMarkers struct {
	Close        json.RawMessage `json:"close"`
	SystemPrompt json.RawMessage `json:"systemPrompt"`
}

// InitializeReplyMeta holds the extensions an initialize answer may carry.
type InitializeReplyMeta struct {
	Steering struct {
		Supported bool `json:"supported"` // the agent takes _session/steering
	} `json:"steering"`
}
