package devmcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"buzzbox/internal/jsonrpc"
)

// Wire names of the MCP surface this server implements.
const (
	methodInitialize   = "initialize"
	methodInitialized  = "notifications/initialized"
	methodPing         = "ping"
	methodToolsList    = "tools/list"
	methodToolsCall    = "tools/call"
	methodDiscover     = "server/discover"
	methodCancelled    = "notifications/cancelled"
	methodProgress     = "notifications/progress"
	methodSetLogLevel  = "logging/setLevel"
	serverName         = "buzz-dev-mcp"
	metaProtocol       = "io.modelcontextprotocol/protocolVersion"
	metaClientCaps     = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo     = "io.modelcontextprotocol/clientInfo"
	metaServerInfo     = "io.modelcontextprotocol/serverInfo"
	resultComplete     = "complete"
	codeUnsupportedVer = -32022 // 2026-07-28: UnsupportedProtocolVersion
)

// Who is told about the host hooks (_Stop, _PostCompact). A host that
// runs hooks says so with capabilities.experimental[hooksCapability]
// (buzz-agent sends it); buzz-agent is also known by its clientInfo name,
// for versions that predate the capability. Other hosts (Claude Code,
// Codex, the Inspector) would offer the hooks to their model as ordinary
// tools, so tools/list leaves them out; they stay callable by name.
const (
	hooksCapability = "buzz/hooks"
	hooksClientName = "buzz-agent"
)

// runsHooks reports whether a client whose capabilities and clientInfo
// are caps and info runs host hooks. Either may be nil or malformed; then
// it does not.
func runsHooks(caps json.RawMessage, info *implementation) bool {
	if info != nil && info.Name == hooksClientName {
		return true
	}
	var c struct {
		Experimental map[string]json.RawMessage `json:"experimental"`
	}
	if len(caps) == 0 || json.Unmarshal(caps, &c) != nil {
		return false
	}
	_, ok := c.Experimental[hooksCapability]
	return ok
}

// isHook reports whether a tool name is a host hook's.
func isHook(name string) bool { return strings.HasPrefix(name, "_") }

// Protocol versions. Version strings are dates and compare as strings.
const (
	version20241105 = "2024-11-05"
	version20250326 = "2025-03-26" // tool annotations
	version20250618 = "2025-06-18" // structuredContent, outputSchema
	version20251125 = "2025-11-25" // newest legacy (initialize) version
	version20260728 = "2026-07-28" // stateless era: server/discover, per-request _meta
)

// legacyVersions are answered through initialize, newest first.
var legacyVersions = []string{version20251125, version20250618, version20250326, version20241105}

// modernVersions are served statelessly, per request.
var modernVersions = []string{version20260728}

// allVersions lists every supported version, newest first, for discovery
// and for the data of an unsupported-version error.
func allVersions() []string { return slices.Concat(modernVersions, legacyVersions) }

// Cache hints for cacheable results in the 2026-07-28 era. The tool list and
// instructions never change during a server process, but they describe this
// process's working directory, so they are private to the client.
const (
	cacheTTLMS = 3_600_000 // one hour; nothing changes before the process ends
	cacheScope = "private"
)

// implementation is MCP's Implementation object.
type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// modern holds the members a 2026-07-28 result carries; empty for legacy.
type modern struct {
	ResultType string         `json:"resultType,omitempty"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// cacheable holds the cache hints of a 2026-07-28 list result.
type cacheable struct {
	TTLMS      *int   `json:"ttlMs,omitempty"`
	CacheScope string `json:"cacheScope,omitempty"`
}

type serverCaps struct {
	Tools toolsCap `json:"tools"`
}

type toolsCap struct {
	ListChanged bool `json:"listChanged"`
}

type initializeParams struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      *implementation `json:"clientInfo"`
}

type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    serverCaps     `json:"capabilities"`
	ServerInfo      implementation `json:"serverInfo"`
	Instructions    string         `json:"instructions,omitempty"`
}

type discoverResult struct {
	modern
	cacheable
	SupportedVersions []string   `json:"supportedVersions"`
	Capabilities      serverCaps `json:"capabilities"`
	Instructions      string     `json:"instructions,omitempty"`
}

type toolsListResult struct {
	modern
	cacheable
	Tools []json.RawMessage `json:"tools"`
}

type callParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      *struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"_meta"`
}

// toolResult is a tools/call result.
type toolResult struct {
	modern
	Content           []content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
}

// encode renders the result as compact JSON in one pass over the
// (possibly large) texts, for the connection to send without re-encoding.
// HTML characters are not escaped: the reader is a program, and code is
// full of < > &.
func (r *toolResult) encode() (jsonrpc.Encoded, error) {
	size := 64
	for _, c := range r.Content {
		size += len(c.Text) + len(c.Data) + 64
	}
	var b bytes.Buffer
	b.Grow(size + size/16)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// put writes v and drops the newline Encode adds.
	put := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1)
		return nil
	}
	b.WriteByte('{')
	if r.ResultType != "" {
		b.WriteString(`"resultType":`)
		if err := put(r.ResultType); err != nil {
			return nil, err
		}
		b.WriteString(`,"_meta":`)
		if err := put(r.Meta); err != nil {
			return nil, err
		}
		b.WriteByte(',')
	}
	b.WriteString(`"content":[`)
	for i, c := range r.Content {
		if i > 0 {
			b.WriteByte(',')
		}
		if c.Type == "image" {
			b.WriteString(`{"type":"image","data":`)
			if err := put(c.Data); err != nil {
				return nil, err
			}
			b.WriteString(`,"mimeType":`)
			if err := put(c.MimeType); err != nil {
				return nil, err
			}
		} else {
			b.WriteString(`{"type":"text","text":`)
			if err := put(c.Text); err != nil {
				return nil, err
			}
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	if r.StructuredContent != nil {
		b.WriteString(`,"structuredContent":`)
		if err := put(r.StructuredContent); err != nil {
			return nil, err
		}
	}
	if r.IsError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteByte('}')
	return jsonrpc.Encoded(b.Bytes()), nil
}

// content is one content block: text or image.
type content struct {
	Type     string // "text" or "image"
	Text     string // for text; sent even when empty, as the schema requires
	Data     string // for image: standard base64
	MimeType string // for image
}

// MarshalJSON writes only the members of the block's type.
func (c content) MarshalJSON() ([]byte, error) {
	if c.Type == "image" {
		return json.Marshal(struct {
			Type     string `json:"type"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		}{c.Type, c.Data, c.MimeType})
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{c.Type, c.Text})
}

func textContent(s string) content { return content{Type: "text", Text: s} }

// textResult is a successful result with one text block. An empty text is
// still sent as a text block ("text": ""), which is how the hooks say "no
// objection".
func textResult(s string) *toolResult { return &toolResult{Content: []content{textContent(s)}} }

type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      int64           `json:"progress"`
	Total         int64           `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

type cancelledParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Reason    string          `json:"reason,omitempty"`
}

// unsupportedVersionData is the data of a -32022 error.
type unsupportedVersionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}
