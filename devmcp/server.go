package devmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/mcp"
)

// Server is one buzz-dev-mcp process's MCP server: its tools and the state
// they share. Create it with newServer and run it with serve.
type Server struct {
	log       *slog.Logger
	cwd       string   // server working directory; root of relative paths
	childEnv  []string // environment of shell children
	sh        shellInfo
	sess      *session
	todos     todoList
	bootstrap string
	version   string // serverInfo.version
	opts      options
	media     mediaAuth      // relay media read tokens for view_image
	ws        workspaceTools // relay, key and auth tag of the workspace tools
	// sandbox is the command line that runs a shell under Landlock:
	// this executable, its identity name, the hidden entry and the
	// policy, "--" last. Nil runs shells directly.
	sandbox []string
	// ownProc: sandboxed shells also get their own PID, mount and UTS
	// namespaces and /proc (and a user namespace, for a user other than
	// root), when the start-up check passed.
	ownProc bool
	// reaper: without them, the sandbox entry stays the shell's parent as
	// a child subreaper and stops whatever the command detached from its
	// process group.
	reaper bool
	// fence keeps the file tools out of what the sandbox hides; nil when
	// the sandbox is off.
	fence *fence

	toolTable []tool
	byName    map[string]*tool

	conn    *jsonrpc.Conn
	closers []func() error // undo start-up, run by close in reverse

	mu         sync.Mutex
	negotiated string // legacy protocol version chosen by initialize; "" before
	hooks      bool   // the initialize'd client runs host hooks (runsHooks)
}

// options are the durations a test may shorten; the zero value means the
// defaults from limits.go.
type options struct {
	killGrace       time.Duration
	readerJoin      time.Duration
	reapAfterCancel time.Duration
	// keyDir holds the file NOSTR_PRIVATE_KEY_FILE named; the shell
	// sandbox keeps it unreadable. Empty when the key came otherwise.
	keyDir string
}

func (o options) withDefaults() options {
	if o.killGrace <= 0 {
		o.killGrace = killGrace
	}
	if o.readerJoin <= 0 {
		o.readerJoin = readerJoin
	}
	if o.reapAfterCancel <= 0 {
		o.reapAfterCancel = reapAfterCancel
	}
	return o
}

// call is what a tool handler knows about the request it serves.
type call struct {
	id            json.RawMessage
	progressToken json.RawMessage // nil when the client asked for no progress
	conn          *jsonrpc.Conn
	last          int64 // last progress value sent; progress must increase
}

// progress sends a notifications/progress for the call, if the client asked
// for progress. elapsed and total are reported in milliseconds.
func (c *call) progress(elapsed, total time.Duration, msg string) {
	if c == nil || c.progressToken == nil || c.conn == nil {
		return
	}
	p := elapsed.Milliseconds()
	if p <= c.last {
		p = c.last + 1
	}
	c.last = p
	_ = c.conn.Notify(mcp.MethodProgress, mcp.ProgressParams{ // a closed connection ends the call soon anyway
		ProgressToken: c.progressToken,
		Progress:      p,
		Total:         total.Milliseconds(),
		Message:       msg,
	})
}

// root returns the directory relative paths of a call start from.
func (s *Server) root(workdir *string) string {
	if workdir == nil || *workdir == "" {
		return s.cwd
	}
	if filepath.IsAbs(*workdir) {
		return *workdir
	}
	return filepath.Join(s.cwd, *workdir)
}

func (s *Server) indexTools() {
	s.toolTable = append(s.tools(), s.workspaceTools()...)
	slices.SortFunc(s.toolTable, func(a, b tool) int { return strings.Compare(a.name, b.name) })
	s.byName = make(map[string]*tool, len(s.toolTable))
	for i := range s.toolTable {
		t := &s.toolTable[i]
		if _, dup := s.byName[t.name]; dup {
			panic("devmcp: duplicate tool " + t.name) // programmer error at startup
		}
		if t.description == "" {
			panic("devmcp: tool " + t.name + " has no description") // programmer error at startup
		}
		if !json.Valid([]byte(t.inputSchema)) || (t.outputSchema != "" && !json.Valid([]byte(t.outputSchema))) {
			panic("devmcp: tool " + t.name + " has an invalid schema") // programmer error at startup
		}
		s.byName[t.name] = t
	}
}

// reqMeta is what a request's params._meta says about the era.
type reqMeta struct {
	modern  bool   // the request carries the 2026-07-28 per-request triple
	version string // its protocol version
	hooks   bool   // its client capabilities or info say it runs host hooks
}

// handle is the jsonrpc.Handler: it routes one MCP request or notification.
func (s *Server) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.IsNotification() {
		s.notification(req)
		return nil, nil
	}
	params := bytes.TrimSpace(req.Params)
	if len(params) > 0 && params[0] != '{' {
		return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "params of %s must be an object", req.Method)
	}
	meta, err := readMeta(params)
	if err != nil {
		return nil, err
	}
	if meta.modern {
		switch req.Method {
		case mcp.MethodInitialize, mcp.MethodPing, mcp.MethodSetLogLevel:
			return nil, &jsonrpc.Error{Code: jsonrpc.MethodNotFound, Message: fmt.Sprintf("%s is not part of protocol version %s", req.Method, meta.version)}
		}
	}
	res, err := s.route(ctx, req, params, meta)
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Server) route(ctx context.Context, req *jsonrpc.Request, params json.RawMessage, meta reqMeta) (any, error) {
	switch req.Method {
	case mcp.MethodInitialize:
		return s.initialize(params)
	case mcp.MethodPing:
		return struct{}{}, nil
	case mcp.MethodDiscover:
		if !meta.modern {
			return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "%s needs params._meta with %q (at least %s) and %q", mcp.MethodDiscover, mcp.MetaProtocolVersion, mcp.Version20260728, mcp.MetaClientCapabilities)
		}
		ttl := cacheTTLMS
		return &mcp.DiscoverResult{
			Modern:            s.modernFields(),
			Cacheable:         mcp.Cacheable{TTLMS: &ttl, CacheScope: cacheScope},
			SupportedVersions: allVersions(),
			Capabilities:      mcp.ServerCapabilities{},
			Instructions:      s.bootstrap,
		}, nil
	case mcp.MethodToolsList:
		return s.listTools(params, meta)
	case mcp.MethodToolsCall:
		return s.callTool(ctx, req, params, meta)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.MethodNotFound, Message: "method not found: " + req.Method, Data: map[string]string{"method": req.Method}}
}

// readMeta inspects params._meta for the 2026-07-28 triple. A request naming
// a version from that era but not one this server speaks gets -32022 with
// the supported list; one missing the client capabilities gets -32602.
func readMeta(params json.RawMessage) (reqMeta, error) {
	if len(params) == 0 || !bytes.Contains(params, []byte(mcp.MetaProtocolVersion)) {
		return reqMeta{}, nil // cheap path: legacy requests never mention it
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return reqMeta{}, jsonrpc.Errorf(jsonrpc.InvalidParams, "invalid params: %s", describeDecodeError(err))
	}
	raw, ok := p.Meta[mcp.MetaProtocolVersion]
	if !ok {
		return reqMeta{}, nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return reqMeta{}, jsonrpc.Errorf(jsonrpc.InvalidParams, "_meta %q must be a string", mcp.MetaProtocolVersion)
	}
	if v < mcp.Version20260728 {
		// An older version in _meta selects nothing: the request is served
		// the legacy way, as the go-sdk does.
		return reqMeta{}, nil
	}
	if !slices.Contains(modernVersions, v) {
		return reqMeta{}, &jsonrpc.Error{Code: mcp.CodeUnsupportedVersion, Message: "unsupported protocol version " + v,
			Data: mcp.UnsupportedVersionData{Supported: allVersions(), Requested: v}}
	}
	caps := bytes.TrimSpace(p.Meta[mcp.MetaClientCapabilities])
	if len(caps) == 0 || caps[0] != '{' {
		return reqMeta{}, jsonrpc.Errorf(jsonrpc.InvalidParams, "missing or invalid _meta field %q (an object is required in protocol version %s)", mcp.MetaClientCapabilities, v)
	}
	var info *implementation
	if raw := p.Meta[mcp.MetaClientInfo]; len(raw) > 0 && json.Unmarshal(raw, &info) != nil {
		info = nil // clientInfo is informational; a malformed one names nobody
	}
	return reqMeta{modern: true, version: v, hooks: runsHooks(caps, info)}, nil
}

func (s *Server) modernFields() mcp.Modern {
	return mcp.Modern{ResultType: mcp.ResultComplete, Meta: map[string]any{mcp.MetaServerInfo: s.info()}}
}

func (s *Server) info() implementation {
	return implementation{Name: serverName, Title: "buzz developer tools", Version: s.version}
}

// initialize answers the legacy handshake. An unknown version is not an
// error: the server counter-offers its newest legacy version and the client
// decides whether it can use it.
func (s *Server) initialize(params json.RawMessage) (any, error) {
	var p mcp.InitializeParams
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "invalid initialize params: %s", describeDecodeError(err))
		}
	}
	v := mcp.Version20251125
	if slices.Contains(legacyVersions, p.ProtocolVersion) {
		v = p.ProtocolVersion
	}
	hooks := runsHooks(p.Capabilities, p.ClientInfo)
	s.mu.Lock()
	s.negotiated = v
	s.hooks = hooks
	s.mu.Unlock()
	client := "unknown"
	if p.ClientInfo != nil {
		client = p.ClientInfo.Name + " " + p.ClientInfo.Version
	}
	s.log.Info("initialize", "requested", p.ProtocolVersion, "negotiated", v, "client", client, "hooks", hooks)
	return &mcp.InitializeResult{
		ProtocolVersion: v,
		Capabilities:    mcp.ServerCapabilities{},
		ServerInfo:      s.info(),
		Instructions:    s.bootstrap,
	}, nil
}

// versionFor is the protocol version a request is served under.
func (s *Server) versionFor(meta reqMeta) string {
	if meta.modern {
		return meta.version
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.negotiated == "" {
		return mcp.Version20251125 // no initialize seen: assume the newest legacy client
	}
	return s.negotiated
}

// listsHooks reports whether tools/list shows the host hooks to the client
// of a request: a modern request says so in its own _meta, a legacy one
// through the initialize that preceded it.
func (s *Server) listsHooks(meta reqMeta) bool {
	if meta.modern {
		return meta.hooks
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hooks
}

func (s *Server) listTools(params json.RawMessage, meta reqMeta) (any, error) {
	var p mcp.ListToolsParams
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "invalid tools/list params: %s", describeDecodeError(err))
		}
	}
	if p.Cursor != nil && *p.Cursor != "" {
		return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "invalid cursor %q: the tool list has a single page", *p.Cursor)
	}
	v := s.versionFor(meta)
	hooks := s.listsHooks(meta)
	res := &mcp.ListToolsResult{Tools: make([]mcp.Tool, 0, len(s.toolTable))}
	for i := range s.toolTable {
		if isHook(s.toolTable[i].name) && !hooks {
			continue
		}
		res.Tools = append(res.Tools, s.toolTable[i].entry(v))
	}
	if meta.modern {
		ttl := cacheTTLMS
		res.Modern = s.modernFields()
		res.Cacheable = mcp.Cacheable{TTLMS: &ttl, CacheScope: cacheScope}
	}
	return res, nil
}

func (s *Server) callTool(ctx context.Context, req *jsonrpc.Request, params json.RawMessage, meta reqMeta) (res any, err error) {
	var p mcp.CallToolParams
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "invalid tools/call params: %s", describeDecodeError(err))
		}
	}
	if p.Name == nil {
		return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "tools/call needs params.name")
	}
	t, ok := s.byName[*p.Name]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.InvalidParams, Message: "Unknown tool: " + *p.Name,
			Data: map[string]any{"tools": s.toolNames()}}
	}
	c := &call{id: req.ID, conn: s.conn}
	if p.Meta != nil && len(p.Meta.ProgressToken) > 0 && string(p.Meta.ProgressToken) != "null" {
		c.progressToken = p.Meta.ProgressToken
	}
	log := s.log.With("tool", t.name, "id", string(req.ID))
	defer func() {
		if r := recover(); r != nil {
			log.Error("tool panicked", "panic", r, "stack", string(debug.Stack()))
			res, err = nil, jsonrpc.Errorf(jsonrpc.InternalError, "%s: internal error: %v", t.name, r)
		}
	}()
	start := time.Now()
	out, err := t.run(ctx, c, p.Arguments)
	if ctx.Err() != nil {
		// Cancelled (notifications/cancelled, or the client went away):
		// MCP asks that such a request get no response at all.
		log.Info("call cancelled", "elapsed", time.Since(start))
		return nil, jsonrpc.ErrNoReply
	}
	var te *toolError
	switch {
	case errors.As(err, &te):
		log.Info("tool error", "err", te.msg, "elapsed", time.Since(start))
		out = &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(te.msg)}, IsError: true}
	case err != nil:
		if !errors.Is(err, jsonrpc.ErrNoReply) {
			log.Error("tool failed", "err", err)
		}
		return nil, err
	default:
		log.Debug("tool done", "elapsed", time.Since(start))
	}
	if s.versionFor(meta) < mcp.Version20250618 {
		out.StructuredContent = nil
	}
	if meta.modern {
		out.Modern = s.modernFields()
	}
	return encodeResult(out)
}

func (s *Server) toolNames() []string {
	names := make([]string, len(s.toolTable))
	for i := range s.toolTable {
		names[i] = s.toolTable[i].name
	}
	return names
}

// notification handles the notifications a client may send. It runs on the
// connection's reader goroutine, so it never blocks.
func (s *Server) notification(req *jsonrpc.Request) {
	switch req.Method {
	case mcp.MethodCancelled:
		var p mcp.CancelledParams
		if err := json.Unmarshal(req.Params, &p); err != nil || len(p.RequestID) == 0 {
			s.log.Debug("ignored malformed cancellation", "params", string(req.Params))
			return
		}
		found := s.conn.CancelRequest(p.RequestID)
		s.log.Info("cancel requested", "id", string(p.RequestID), "reason", p.Reason, "running", found)
	case mcp.MethodInitialized:
		s.log.Debug("client initialized")
	default:
		s.log.Debug("ignored notification", "method", req.Method)
	}
}

// buildVersion is the version reported in serverInfo.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return "devel"
	}
	return bi.Main.Version
}
