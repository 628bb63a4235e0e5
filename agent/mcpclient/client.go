// Package mcpclient is buzz-agent's MCP client: it starts MCP servers as
// child processes (stdio, one process group each) or reaches them over
// Streamable HTTP, performs the legacy initialize handshake (offering
// 2025-11-25), lists tools with paging and calls them with timeouts and
// notifications/cancelled. A Registry holds one session's servers under
// "server__tool" names, enforces the caps, hides "_" hook tools from the
// model and restarts dead servers lazily with exponential backoff.
//
// Both MCP eras are spoken on stdio: a server/discover probe selects the
// handshake-free 2026-07-28 revision when the server offers it, else the
// legacy handshake runs. HTTP servers use the legacy handshake; their SSE
// streams are resumed after an early close (GET with Last-Event-ID, after
// the server's retry delay) and their standalone GET stream is listened to.
// A server that answers 401 gets OAuth 2.1 bearer tokens from a client
// registered beforehand (client credentials; see oauth.go).
//
// It does not implement resources, prompts, sampling, roots or elicitation:
// server requests other than ping are answered -32601.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/mcp"
)

// Tool is one tool as a server lists it.
type Tool = mcp.Tool

// Content is one content block of a tool result.
type Content = mcp.Content

// Result is a tools/call result.
type Result = mcp.CallToolResult

// ErrTransport marks failures of the connection itself (closed pipe, dead
// process, protocol timeout, unexpected reply): the server is unusable.
var ErrTransport = errors.New("transport failure")

// transport is one way of exchanging JSON-RPC messages with a server.
type transport interface {
	call(ctx context.Context, method string, params, result any, onID func(json.RawMessage)) error
	notify(method string, params any) error
	// close ends the connection; graceful asks the server to stop first.
	close(graceful bool)
	// done is closed when the connection ended on its own.
	done() <-chan struct{}
}

// Client is a connection to one initialised MCP server.
type Client struct {
	name string
	t    transport
	log  *slog.Logger
	// meta is the per-request _meta of the modern protocol; nil in legacy mode.
	meta map[string]any
}

// handshake initialises the server and returns its tools. On stdio it
// first probes server/discover (2026-07-28): a discover result that lists
// that version selects the modern, handshake-free mode; any error or
// silence within the probe timeout selects the legacy initialize.
func handshake(ctx context.Context, name string, t transport, timeout time.Duration, probe bool, log *slog.Logger) (*Client, []Tool, error) {
	c := &Client{name: name, t: t, log: log}
	if probe && c.discover(ctx, min(timeout, discoverTimeout)) {
		log.Debug("mcp server speaks the modern protocol", "version", mcp.Version20260728)
		lctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		tools, err := c.listTools(lctx)
		if err != nil {
			return nil, nil, fmt.Errorf("list_tools %s: %w", name, timeoutErr(lctx, err, timeout))
		}
		return c, tools, nil
	}
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	caps, err := json.Marshal(clientCaps())
	if err != nil {
		return nil, nil, fmt.Errorf("init %s: %w", name, err)
	}
	params := mcp.InitializeParams{ProtocolVersion: protocolVersion, Capabilities: caps, ClientInfo: &clientInfo}
	var init initializeReply
	if err := t.call(ictx, mcp.MethodInitialize, params, &init, nil); err != nil {
		return nil, nil, fmt.Errorf("init %s: %w", name, timeoutErr(ictx, err, timeout))
	}
	if err := t.notify(mcp.MethodInitialized, nil); err != nil {
		return nil, nil, fmt.Errorf("init %s: %w", name, err)
	}
	lctx, cancel2 := context.WithTimeout(ctx, timeout)
	defer cancel2()
	tools, err := c.listTools(lctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list_tools %s: %w", name, timeoutErr(lctx, err, timeout))
	}
	return c, tools, nil
}

// initializeReply is the part of mcp.InitializeResult the client reads.
// The server's other members are not judged, so a server with odd
// capabilities or serverInfo still works.
type initializeReply struct {
	ProtocolVersion string `json:"protocolVersion"`
}

var clientInfo = mcp.Implementation{Name: "buzz-agent", Version: "1"}

// clientCaps is the agent's MCP client capabilities, in initialize and in
// the modern per-request _meta alike: it runs host hooks (tools named
// _Stop, _PostCompact …) and hides them from the model, and says so with
// mcp.HooksCapability; buzz-dev-mcp lists its hooks only to clients that
// send it.
func clientCaps() mcp.ClientCapabilities {
	return mcp.ClientCapabilities{Experimental: map[string]json.RawMessage{mcp.HooksCapability: json.RawMessage("{}")}}
}

// discover sends server/discover and reports whether the server speaks
// the modern revision; then every later request carries the modern _meta.
func (c *Client) discover(ctx context.Context, d time.Duration) bool {
	meta := map[string]any{
		mcp.MetaProtocolVersion:    mcp.Version20260728,
		mcp.MetaClientCapabilities: clientCaps(),
		mcp.MetaClientInfo:         clientInfo,
	}
	dctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	// Only supportedVersions of mcp.DiscoverResult is read; the server's
	// other members are not judged.
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := c.t.call(dctx, mcp.MethodDiscover, map[string]any{"_meta": meta}, &res, nil); err != nil {
		return false
	}
	for _, v := range res.SupportedVersions {
		if v == mcp.Version20260728 {
			c.meta = meta
			return true
		}
	}
	return false
}

// params adds the modern _meta to a request's params when it applies.
func (c *Client) params(p map[string]any) any {
	if c.meta == nil {
		if len(p) == 0 {
			return nil
		}
		return p
	}
	if p == nil {
		p = map[string]any{}
	}
	p["_meta"] = c.meta
	return p
}

func timeoutErr(ctx context.Context, err error, d time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timeout after %ds", int(d.Seconds()))
	}
	return err
}

func (c *Client) listTools(ctx context.Context) ([]Tool, error) {
	var all []Tool
	cursor := ""
	for page := 0; page < maxListPages; page++ {
		p := map[string]any{}
		if cursor != "" {
			p["cursor"] = cursor
		}
		params := c.params(p)
		var res mcp.ListToolsResult
		if err := c.t.call(ctx, mcp.MethodToolsList, params, &res, nil); err != nil {
			return nil, err
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" {
			return all, nil
		}
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("%s: more than %d pages", mcp.MethodToolsList, maxListPages)
}

// CallTool calls a tool. When ctx ends first it sends notifications/cancelled
// naming the request and returns ctx's error. A JSON-RPC error reply comes
// back as *jsonrpc.Error (the server rejected the call but is healthy); a
// broken connection wraps ErrTransport.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage, reason string) (*Result, error) {
	params := map[string]any{"name": name}
	if len(args) > 0 && string(args) != "null" {
		params["arguments"] = args
	}
	var id json.RawMessage
	var res Result
	err := c.t.call(ctx, mcp.MethodToolsCall, c.params(params), &res, func(i json.RawMessage) { id = i })
	if err == nil {
		return &res, nil
	}
	if ctx.Err() != nil {
		if id != nil {
			// Fire and forget: the server should stop work and not reply.
			// The send ends when written (stdio; a dead child fails it at
			// once) or within httpNotifyTimeout (HTTP), so the caller never
			// waits on it.
			go func() { _ = c.t.notify(mcp.MethodCancelled, mcp.CancelledParams{RequestID: id, Reason: reason}) }()
		}
		return nil, ctx.Err()
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return nil, rpcErr
	}
	return nil, fmt.Errorf("%w: %v", ErrTransport, err)
}

// Close ends the connection; graceful closes stdin and signals before
// killing, otherwise the process group is killed at once.
func (c *Client) Close(graceful bool) { c.t.close(graceful) }

// Done is closed when the server's connection ended by itself.
func (c *Client) Done() <-chan struct{} { return c.t.done() }

// serverRequests answers what a server may ask of the client: ping gets {},
// anything else -32601. Notifications are ignored except
// notifications/tools/list_changed, passed to onListChanged (which must
// not block: it runs on the connection's reader goroutine).
func serverRequests(onListChanged func()) jsonrpc.Handler {
	return func(_ context.Context, req *jsonrpc.Request) (any, error) {
		if req.IsNotification() {
			if req.Method == mcp.MethodToolsListChanged && onListChanged != nil {
				onListChanged()
			}
			return nil, nil
		}
		if req.Method == mcp.MethodPing {
			return struct{}{}, nil
		}
		return nil, jsonrpc.Errorf(jsonrpc.MethodNotFound, "method not found: %s", req.Method)
	}
}

// ListTools asks the server for its current tools.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) { return c.listTools(ctx) }
