// Package mcp holds the Model Context Protocol wire vocabulary that both
// sides of buzzbox share: buzz-dev-mcp (the server, devmcp) and
// buzz-agent's client (agent/mcpclient). It names the methods, the
// protocol versions, the _meta keys, the error codes and the buzz/hooks
// capability, and gives the JSON shapes of the tools surface as structs.
// Field and method names are spelled as on the wire.
//
// Versions: the legacy, initialize-negotiated revisions 2024-11-05,
// 2025-03-26, 2025-06-18 and 2025-11-25, and the stateless 2026-07-28
// revision (server/discover, per-request _meta). Decoding is lenient:
// unknown fields are ignored, since peers send newer ones.
//
// It holds data shapes only: no transport (stdio, Streamable HTTP), no
// JSON-RPC framing or request matching (see internal/jsonrpc), no
// behaviour, and only the tools part of MCP: no resources, prompts,
// sampling, roots or elicitation.
package mcp

import "encoding/json"

// Method names.
const (
	MethodInitialize       = "initialize"
	MethodInitialized      = "notifications/initialized"
	MethodPing             = "ping"
	MethodToolsList        = "tools/list"
	MethodToolsCall        = "tools/call"
	MethodDiscover         = "server/discover" // 2026-07-28
	MethodCancelled        = "notifications/cancelled"
	MethodProgress         = "notifications/progress"
	MethodToolsListChanged = "notifications/tools/list_changed"
	MethodSetLogLevel      = "logging/setLevel"
)

// Protocol versions. Version strings are dates and compare as strings.
const (
	Version20241105 = "2024-11-05"
	Version20250326 = "2025-03-26" // tool annotations
	Version20250618 = "2025-06-18" // structuredContent, outputSchema
	Version20251125 = "2025-11-25" // newest legacy (initialize) version
	Version20260728 = "2026-07-28" // stateless era: server/discover, per-request _meta
)

// Keys of the per-request _meta of the 2026-07-28 era, and of the
// serverInfo a result carries there.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// ResultComplete is the resultType of a finished 2026-07-28 result.
const ResultComplete = "complete"

// CodeUnsupportedVersion is the JSON-RPC error code of a request naming a
// protocol version the server does not speak (2026-07-28:
// UnsupportedProtocolVersion); its data is UnsupportedVersionData.
const CodeUnsupportedVersion = -32022

// HTTP headers of the Streamable HTTP transport.
const (
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderSessionID       = "Mcp-Session-Id"
)

// HooksCapability is the experimental client capability by which a host
// says it runs host hooks (tools named _Stop, _PostCompact …) and hides
// them from the model; buzz-dev-mcp lists its hooks only to such clients.
const HooksCapability = "buzz/hooks"

// Implementation names a program: clientInfo, serverInfo.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// ClientCapabilities is what a client offers. Only the experimental
// members are read here; the rest are kept raw.
type ClientCapabilities struct {
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
}

// ServerCapabilities is what a server offers.
type ServerCapabilities struct {
	Tools ToolsCapability `json:"tools"`
}

// ToolsCapability says whether the server announces changes of its tool
// list (notifications/tools/list_changed).
type ToolsCapability struct {
	ListChanged bool `json:"listChanged"`
}

// InitializeParams is the legacy initialize request. Capabilities stay raw
// so a server can judge a malformed object itself.
type InitializeParams struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      *Implementation `json:"clientInfo"`
}

// InitializeResult is the server's answer to initialize.
type InitializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// Modern holds the members every 2026-07-28 result carries; empty (and
// absent on the wire) in the legacy era.
type Modern struct {
	ResultType string         `json:"resultType,omitempty"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// Cacheable holds the cache hints of a 2026-07-28 cacheable result.
type Cacheable struct {
	TTLMS      *int   `json:"ttlMs,omitempty"`
	CacheScope string `json:"cacheScope,omitempty"`
}

// DiscoverResult is the answer to server/discover.
type DiscoverResult struct {
	Modern
	Cacheable
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
}

// Tool is one entry of tools/list.
type Tool struct {
	Name         string           `json:"name"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"` // from 2025-06-18
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`  // from 2025-03-26
}

// ToolAnnotations are a tool's behaviour hints. A nil hint is absent on
// the wire and means the spec's default (destructive and open-world true,
// the others false).
type ToolAnnotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// ListToolsParams is the tools/list request.
type ListToolsParams struct {
	Cursor *string `json:"cursor,omitempty"`
}

// ListToolsResult is a tools/list page.
type ListToolsResult struct {
	Modern
	Cacheable
	Tools      []Tool `json:"tools"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// CallToolParams is the tools/call request. Name is a pointer so that a
// missing name can be told from an empty one.
type CallToolParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      *RequestMeta    `json:"_meta,omitempty"`
}

// RequestMeta is the part of a request's _meta read here.
type RequestMeta struct {
	ProgressToken json.RawMessage `json:"progressToken,omitempty"`
}

// CallToolResult is a tools/call result.
type CallToolResult struct {
	Modern
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"` // from 2025-06-18
	IsError           bool      `json:"isError,omitempty"`
}

// Content types.
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResourceLink = "resource_link"
	ContentResource     = "resource"
)

// Content is one content block of a tool result: text (Text), image or
// audio (Data, standard base64, and MimeType), resource_link (URI) or an
// embedded resource (Resource).
type Content struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	Data     string            `json:"data,omitempty"`
	MimeType string            `json:"mimeType,omitempty"`
	URI      string            `json:"uri,omitempty"`
	Resource *EmbeddedResource `json:"resource,omitempty"`
}

// TextContent is a text block.
func TextContent(s string) Content { return Content{Type: ContentText, Text: s} }

// MarshalJSON writes a text block's text even when empty, as the schema
// requires; other members are left out when empty.
func (c Content) MarshalJSON() ([]byte, error) {
	type plain Content
	if c.Type != ContentText || c.Text != "" {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
		plain
	}{Type: c.Type, plain: plain(c)})
}

// EmbeddedResource is the resource of a "resource" content block.
type EmbeddedResource struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
}

// ProgressParams is a notifications/progress.
type ProgressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      int64           `json:"progress"`
	Total         int64           `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// CancelledParams is a notifications/cancelled.
type CancelledParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Reason    string          `json:"reason,omitempty"`
}

// UnsupportedVersionData is the data of a CodeUnsupportedVersion error.
type UnsupportedVersionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}
