package devmcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/mcp"
)

// serverName is this server's serverInfo name.
const serverName = "buzz-dev-mcp"

// Who is told about the host hooks (_Stop, _PostCompact). A host that
// runs hooks says so with capabilities.experimental[hooksCapability]
// (buzz-agent sends it); buzz-agent is also known by its clientInfo name,
// for versions that predate the capability. Other hosts (Claude Code,
// Codex, the Inspector) would offer the hooks to their model as ordinary
// tools, so tools/list leaves them out; they stay callable by name.
const (
	hooksCapability = mcp.HooksCapability
	hooksClientName = "buzz-agent"
)

// runsHooks reports whether a client whose capabilities and clientInfo
// are caps and info runs host hooks. Either may be nil or malformed; then
// it does not.
func runsHooks(caps json.RawMessage, info *implementation) bool {
	if info != nil && info.Name == hooksClientName {
		return true
	}
	var c mcp.ClientCapabilities
	if len(caps) == 0 || json.Unmarshal(caps, &c) != nil {
		return false
	}
	_, ok := c.Experimental[hooksCapability]
	return ok
}

// isHook reports whether a tool name is a host hook's.
func isHook(name string) bool { return strings.HasPrefix(name, "_") }

// legacyVersions are answered through initialize, newest first.
var legacyVersions = []string{mcp.Version20251125, mcp.Version20250618, mcp.Version20250326, mcp.Version20241105}

// modernVersions are served statelessly, per request.
var modernVersions = []string{mcp.Version20260728}

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
type implementation = mcp.Implementation

// encodeResult renders a tools/call result as compact JSON in one pass over the
// (possibly large) texts, for the connection to send without re-encoding.
// HTML characters are not escaped: the reader is a program, and code is
// full of < > &.
func encodeResult(r *mcp.CallToolResult) (jsonrpc.Encoded, error) {
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
		if c.Type == mcp.ContentImage {
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

// textResult is a successful result with one text block. An empty text is
// still sent as a text block ("text": ""), which is how the hooks say "no
// objection".
func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(s)}}
}
