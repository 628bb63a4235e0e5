package mcpclient

import (
	"time"

	"buzzbox/internal/mcp"
)

// Registry caps (spec names in parentheses).
const (
	maxServers          = 16       // MCP servers per session (MAX_MCP_SERVERS)
	maxToolsPerSession  = 128      // tools per session, hooks included (MAX_TOOLS_PER_SESSION)
	maxNameLen          = 128      // server or bare tool name bytes (MAX_NAME_LEN)
	maxQualifiedNameLen = 64       // "<server>__<tool>" bytes; LLM APIs reject longer (MAX_QNAME_LEN)
	maxDescriptionBytes = 1024     // tool description bytes shown to the model (MAX_DESCRIPTION_BYTES)
	maxSchemaBytes      = 4096     // serialized input schema bytes; larger becomes {} (MAX_SCHEMA_BYTES)
	maxListPages        = 64       // tools/list pages followed before giving up on a looping cursor
	maxFrameBytes       = 16 << 20 // one MCP message from a server (stdio line or HTTP body)
)

// Child shutdown: close stdin, wait stdinGrace; SIGTERM the group, wait
// termGrace; then SIGKILL. The spec's transport section asks for this order.
const (
	stdinGrace = 500 * time.Millisecond
	termGrace  = 500 * time.Millisecond
)

// protocolVersion is the MCP revision offered in initialize (the newest
// legacy-era one; any counter-offer is accepted).
const protocolVersion = mcp.Version20251125

// discoverTimeout bounds the server/discover probe; a legacy server that
// stays silent costs at most this before the initialize handshake.
const discoverTimeout = 2 * time.Second

// restartForever is how far a server that used up its restarts is pushed
// into the future.
const restartForever = 24 * time.Hour

// Streamable HTTP: error bodies quoted up to maxHTTPErrorBytes; SSE lines
// are read through a sseBuffer-sized buffer (longer lines still work, and
// the whole reply stays under maxFrameBytes).
const (
	maxHTTPErrorBytes = 4 << 10
	sseBuffer         = 64 << 10
)

// httpNotifyTimeout bounds a notification POST (initialized, cancelled):
// the server owes only a 202, and a cancel must not hang the caller.
const httpNotifyTimeout = 10 * time.Second

// SSE resumption (MCP 2025-11-25, SEP-1699). A server names its
// reconnection delay in an event's retry field; without one the client
// waits sseDefaultRetry. The delay is kept within [sseMinRetry,
// sseMaxRetry] so a server cannot make the client hammer it or park a
// call for longer than a tool timeout would allow anyway. A resumption GET
// that fails at the network level is tried maxResumeFailures times in a
// row before the stream counts as lost; an HTTP error status ends it at
// once (the server said it will not resume).
const (
	sseDefaultRetry   = time.Second
	sseMinRetry       = 100 * time.Millisecond
	sseMaxRetry       = 30 * time.Second
	maxResumeFailures = 3
)

// OAuth for remote servers: a token is renewed tokenExpirySkew before the
// expiry its server gave (a request in flight must not meet an expired
// token), and an expires_in beyond maxTokenLifetime is cut to it, so a
// token file never claims to stay good for years. Metadata documents and
// token answers are read up to maxOAuthDocumentBytes (real ones are a few
// kilobytes), each request within oauthRequestTimeout. One MCP request
// gets at most maxAuthAttempts new tokens (401, then 403 insufficient_scope
// with more scope), so a server that never accepts one cannot loop us.
const (
	tokenExpirySkew       = 30 * time.Second
	maxTokenLifetime      = 90 * 24 * time.Hour
	maxOAuthDocumentBytes = 64 << 10
	oauthRequestTimeout   = 30 * time.Second
	maxAuthAttempts       = 2
	// jwtAssertionLifetime is how long a private_key_jwt assertion is
	// valid: long enough for clock skew, short against replay.
	jwtAssertionLifetime = 5 * time.Minute
)
