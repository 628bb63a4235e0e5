package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"buzzbox/internal/statedir"
	"buzzbox/internal/workspace"
)

// Sep joins a server name and a bare tool name into a qualified name.
const Sep = "__"

// envWhitelist lists the agent variables an MCP child inherits; provider
// API keys are deliberately absent. Children do get the Nostr identity keys,
// and the buzz CLI's path, which the harness's base prompt tells the agent
// to run when its shell does not find buzz on PATH.
var envWhitelist = []string{
	"PATH", "HOME", "TERM", "LANG", "LC_ALL", "TMPDIR", "XDG_CONFIG_HOME",
	"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GIT_ASKPASS", "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", workspace.EnvNostrPrivateKey, workspace.EnvPrivateKey, workspace.EnvRelayURL,
	workspace.EnvAuthTag, workspace.EnvDisplayName, workspace.EnvCLI,
	workspace.EnvShellSandbox, workspace.EnvShellWriteDirs, // buzz-dev-mcp's shell sandbox
}

// EnvWhitelist returns the names of the variables MCP children inherit.
func EnvWhitelist() []string { return append([]string(nil), envWhitelist...) }

// Spec describes one server to attach.
type Spec struct {
	Name string
	// Type is "" or "stdio" for a child process, "http" for Streamable HTTP.
	Type    string
	Command string
	Args    []string
	// Env pairs are set after the whitelist and override it.
	Env     [][2]string
	URL     string
	Headers [][2]string
}

// Options configure a Registry. Zero durations are invalid; the agent's
// option parsing fills them.
type Options struct {
	// Cwd is the working directory of stdio children.
	Cwd string
	// Environ is the agent's environment, the source of the whitelist.
	Environ []string
	// Stderr receives the children's stderr. Nil discards it.
	Stderr io.Writer
	// InitTimeout bounds initialize and tools/list, each.
	InitTimeout time.Duration
	// RestartMax is how many failed restarts make a server exhausted.
	RestartMax int
	// RestartBase and RestartCap shape backoff(n) = min(base·2^(n−1), cap) ± 20 %.
	RestartBase, RestartCap time.Duration
	// HookServers says which servers may receive hook calls: nil = none,
	// ["*"] = all, else the listed names.
	HookServers []string
	// Logger receives registry events. Nil discards.
	Logger *slog.Logger
	// HTTP is the client for http servers; nil uses a default one.
	HTTP *http.Client
}

// Registry is one session's MCP servers and their tools.
type Registry struct {
	opts    Options
	log     *slog.Logger
	servers []*server
	tools   []*regTool
	byQName map[string]*regTool
}

type regTool struct {
	qname, bare string
	srv         *server
	desc        string
	schema      json.RawMessage
	hook        bool
}

type server struct {
	name string
	spec Spec
	reg  *Registry

	mu        sync.Mutex
	client    *Client // nil while dead
	listed    map[string]bool
	attempts  int
	nextRetry time.Time
	lastErr   string
	timeouts  int // consecutive hook timeouts

	restart sync.Mutex // one restart at a time
}

// ToolInfo is a tool as the model sees it.
type ToolInfo struct {
	Name        string // qualified
	Description string
	Schema      json.RawMessage
}

// New validates specs, starts each server in order and registers its
// tools. Any failure stops every server started so far.
func New(ctx context.Context, specs []Spec, opts Options) (*Registry, error) {
	if len(specs) > maxServers {
		return nil, fmt.Errorf("too many MCP servers: %d > %d", len(specs), maxServers)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Registry{opts: opts, log: log, byQName: map[string]*regTool{}}
	seen := map[string]bool{}
	for _, sp := range specs {
		if !validName(sp.Name) {
			return nil, fmt.Errorf("invalid server name: %s", sp.Name)
		}
		if seen[sp.Name] {
			return nil, fmt.Errorf("duplicate server name: %s", sp.Name)
		}
		seen[sp.Name] = true
	}
	for _, sp := range specs {
		s := &server{name: sp.Name, spec: sp, reg: r}
		c, tools, err := r.start(ctx, sp, s.relist)
		if err != nil {
			r.Close()
			return nil, err
		}
		s.client = c
		r.servers = append(r.servers, s)
		s.listed = map[string]bool{}
		for _, t := range tools {
			if err := r.register(s, t); err != nil {
				r.Close()
				return nil, err
			}
			s.listed[t.Name] = true
		}
		s.watch(c)
		log.Info("mcp server ready", "server", sp.Name, "tools", len(tools))
	}
	return r, nil
}

// validName: non-empty, ≤128 bytes, [A-Za-z0-9_-] only, no "__".
func validName(n string) bool {
	if n == "" || len(n) > maxNameLen || strings.Contains(n, Sep) {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (r *Registry) register(s *server, t Tool) error {
	if len(r.tools)+1 > maxToolsPerSession {
		return fmt.Errorf("too many tools (>%d)", maxToolsPerSession)
	}
	if !validName(t.Name) {
		return fmt.Errorf("invalid tool name: %s", t.Name)
	}
	q := s.name + Sep + t.Name
	if len(q) > maxQualifiedNameLen {
		return fmt.Errorf("qualified tool name too long: %s (%d > %d)", q, len(q), maxQualifiedNameLen)
	}
	if r.byQName[q] != nil {
		return fmt.Errorf("duplicate tool: %s", q)
	}
	schema := t.InputSchema
	if len(schema) == 0 || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	if len(schema) > maxSchemaBytes {
		r.log.Warn("tool schema too large; sending {}", "tool", q, "bytes", len(schema), "limit", maxSchemaBytes)
		schema = json.RawMessage(`{}`)
	}
	rt := &regTool{qname: q, bare: t.Name, srv: s, desc: clampDescription(t.Description), schema: schema, hook: strings.HasPrefix(t.Name, "_")}
	r.tools = append(r.tools, rt)
	r.byQName[q] = rt
	return nil
}

// clampDescription cuts d to maxDescriptionBytes including a "\n[truncated]"
// marker, at a UTF-8 boundary.
func clampDescription(d string) string {
	if len(d) <= maxDescriptionBytes {
		return d
	}
	const marker = "\n[truncated]"
	cut := maxDescriptionBytes - len(marker)
	for cut > 0 && !utf8.RuneStart(d[cut]) {
		cut--
	}
	return d[:cut] + marker
}

// childEnv builds a child's environment: the whitelist from the agent's
// environment, then the entry's pairs.
func (r *Registry) childEnv(sp Spec) []string {
	var env []string
	lookup := func(k string) (string, bool) {
		for i := len(r.opts.Environ) - 1; i >= 0; i-- {
			if kk, v, ok := strings.Cut(r.opts.Environ[i], "="); ok && kk == k {
				return v, true
			}
		}
		return "", false
	}
	for _, k := range envWhitelist {
		if v, ok := lookup(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, kv := range sp.Env {
		env = append(env, kv[0]+"="+kv[1])
	}
	return env
}

// stateDir is the agent's state directory: $BUZZ_AGENT_STATE_DIR, else
// $XDG_STATE_HOME/buzzbox/agent (or ~/.local/state/buzzbox/agent); "" when
// none can be named. A relative BUZZ_AGENT_STATE_DIR is ignored, as XDG
// does: it would put secrets wherever the agent happens to run, often a
// working tree its shell reads.
func (r *Registry) stateDir() string {
	if d := r.getenv(workspace.EnvAgentStateDir); filepath.IsAbs(d) {
		return d
	}
	root, err := statedir.Root(r.getenv)
	if err != nil {
		return ""
	}
	return filepath.Join(root, "agent")
}

// getenv looks k up in the agent's environment, the last setting winning.
func (r *Registry) getenv(k string) string {
	for i := len(r.opts.Environ) - 1; i >= 0; i-- {
		if kk, v, ok := strings.Cut(r.opts.Environ[i], "="); ok && kk == k {
			return v
		}
	}
	return ""
}

// start connects to one server and performs the handshake. onListChanged
// runs (without blocking) when the server says its tool list changed.
func (r *Registry) start(ctx context.Context, sp Spec, onListChanged func()) (*Client, []Tool, error) {
	log := r.log.With("server", sp.Name)
	var t transport
	switch sp.Type {
	case "", "stdio":
		if sp.Command == "" {
			return nil, nil, fmt.Errorf("init %s: missing command", sp.Name)
		}
		stderr := r.opts.Stderr
		if stderr == nil {
			stderr = io.Discard
		}
		st, err := startStdio(sp.Command, sp.Args, r.childEnv(sp), r.opts.Cwd, stderr, onListChanged, log)
		if err != nil {
			return nil, nil, fmt.Errorf("init %s: %w", sp.Name, err)
		}
		t = st
	case "http":
		hc := r.opts.HTTP
		if hc == nil {
			hc = http.DefaultClient
		}
		var hs []nameValue
		for _, h := range sp.Headers {
			hs = append(hs, nameValue{h[0], h[1]})
		}
		t = newHTTP(sp.URL, hs, hc, onListChanged, log).withOAuth(r.stateDir())
	default:
		return nil, nil, fmt.Errorf("init %s: unsupported MCP transport %q", sp.Name, sp.Type)
	}
	_, isStdio := t.(*stdioTransport)
	c, tools, err := handshake(ctx, sp.Name, t, r.opts.InitTimeout, isStdio, log)
	if err != nil {
		t.close(false)
		return nil, nil, err
	}
	if ht, ok := t.(*httpTransport); ok {
		ht.listen()
	}
	return c, tools, nil
}

// relist refreshes the server's tool list after list_changed, in its own
// goroutine (bounded by the init timeout). Tools the server did not list at
// spawn time stay unknown: the model's catalog only shrinks or recovers.
func (s *server) relist() {
	go func() {
		s.mu.Lock()
		c := s.client
		s.mu.Unlock()
		if c == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.reg.opts.InitTimeout)
		defer cancel()
		tools, err := c.ListTools(ctx)
		if err != nil {
			s.reg.log.Warn("mcp tools/list after list_changed failed", "server", s.name, "err", err)
			return
		}
		listed := map[string]bool{}
		for _, t := range tools {
			listed[t.Name] = true
		}
		s.mu.Lock()
		if s.client == c {
			s.listed = listed
		}
		s.mu.Unlock()
	}()
}

// watch marks the server dead when its connection ends by itself. The
// goroutine ends with the connection.
func (s *server) watch(c *Client) {
	go func() {
		<-c.Done()
		s.markDead(c, "connection closed")
	}()
}

// Tools returns the tools the model may see now: non-hook tools of healthy
// servers that still list them, and of dead servers that may come back.
func (r *Registry) Tools() []ToolInfo {
	out := make([]ToolInfo, 0, len(r.tools))
	for _, t := range r.tools {
		if t.hook {
			continue
		}
		s := t.srv
		s.mu.Lock()
		ok := s.listed[t.bare] && (s.client != nil || s.attempts < s.reg.opts.RestartMax)
		s.mu.Unlock()
		if ok {
			out = append(out, ToolInfo{Name: t.qname, Description: t.desc, Schema: t.schema})
		}
	}
	return out
}

// Bare is the name qname's server gives the tool, "" when it is unknown.
func (r *Registry) Bare(qname string) string {
	if t := r.byQName[qname]; t != nil {
		return t.bare
	}
	return ""
}

// Has reports whether qname is a registered, non-hook tool.
func (r *Registry) Has(qname string) bool {
	t := r.byQName[qname]
	return t != nil && !t.hook
}

// CallKind classifies a failed call.
type CallKind int

// Call failure kinds.
const (
	CallUnavailable CallKind = iota // agent-side: server dead, recovering, tool gone, transport broke
	CallRejected                    // the server answered with a JSON-RPC error; it is healthy
	CallTimeout                     // the per-call timeout hit; the server was killed
	CallCancelled                   // the caller's ctx ended
	CallUnknown                     // no such tool (or a hook)
)

// CallError is a failed tool call.
type CallError struct {
	Kind CallKind
	Msg  string
}

func (e *CallError) Error() string { return e.Msg }

// Call runs qname with args within timeout. Cancelling ctx sends
// notifications/cancelled and returns a CallCancelled error.
func (r *Registry) Call(ctx context.Context, qname string, args json.RawMessage, timeout time.Duration) (*Result, error) {
	t := r.byQName[qname]
	if t == nil || t.hook {
		return nil, &CallError{Kind: CallUnknown, Msg: "unknown tool: " + qname}
	}
	if len(args) > 0 && string(args) != "null" && args[0] != '{' {
		return nil, &CallError{Kind: CallUnavailable, Msg: fmt.Sprintf("tool %s arguments must be a JSON object", qname)}
	}
	return t.srv.call(ctx, t, args, timeout, "session cancelled", func(c *Client) { t.srv.markDead(c, "tool timeout") })
}

// call runs t on s. onTimeout handles a per-call timeout (tools kill the
// server at once, hooks only on the second timeout in a row).
func (s *server) call(ctx context.Context, t *regTool, args json.RawMessage, timeout time.Duration, reason string, onTimeout func(*Client)) (*Result, error) {
	c, err := s.acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &CallError{Kind: CallCancelled, Msg: "cancelled"}
		}
		return nil, &CallError{Kind: CallUnavailable, Msg: err.Error()}
	}
	s.mu.Lock()
	listed := s.listed[t.bare]
	s.mu.Unlock()
	if !listed {
		return nil, &CallError{Kind: CallUnavailable, Msg: fmt.Sprintf("tool '%s': no longer available; the MCP server restarted with a different tool set.", t.qname)}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := c.CallTool(cctx, t.bare, args, reason)
	if err == nil {
		return res, nil
	}
	switch {
	case ctx.Err() != nil:
		return nil, &CallError{Kind: CallCancelled, Msg: "cancelled"}
	case cctx.Err() != nil:
		onTimeout(c)
		return nil, &CallError{Kind: CallTimeout, Msg: fmt.Sprintf("timeout after %ds", int(timeout.Seconds()))}
	}
	var ce *CallError
	if errors.As(err, &ce) {
		return nil, ce
	}
	if errors.Is(err, ErrTransport) {
		s.markDead(c, err.Error())
		return nil, &CallError{Kind: CallUnavailable, Msg: fmt.Sprintf("mcp: server '%s': %v", s.name, err)}
	}
	return nil, &CallError{Kind: CallRejected, Msg: err.Error()}
}

// acquire returns a live client, restarting a dead server when its backoff
// has passed.
func (s *server) acquire(ctx context.Context) (*Client, error) {
	if c, err := s.check(); c != nil || err != nil {
		return c, err
	}
	s.restart.Lock()
	defer s.restart.Unlock()
	if c, err := s.check(); c != nil || err != nil {
		return c, err // another caller restarted it, or it failed meanwhile
	}
	c, tools, err := s.reg.start(ctx, s.spec, s.relist)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.attempts++
		s.lastErr = err.Error()
		if s.attempts >= s.reg.opts.RestartMax {
			s.nextRetry = time.Now().Add(restartForever)
		} else {
			s.nextRetry = time.Now().Add(s.reg.backoff(s.attempts))
		}
		s.reg.log.Warn("mcp restart failed", "server", s.name, "attempts", s.attempts, "err", err)
		return nil, fmt.Errorf("server '%s' restart failed: %v", s.name, err)
	}
	s.client = c
	s.attempts = 0
	s.timeouts = 0
	s.listed = map[string]bool{}
	for _, t := range tools {
		s.listed[t.Name] = true
	}
	s.watch(c)
	s.reg.log.Info("mcp server restarted", "server", s.name, "tools", len(tools))
	return c, nil
}

// check returns the client when healthy, an error when dead and not yet
// due for a restart, or (nil, nil) when a restart should be tried.
func (s *server) check() (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		return s.client, nil
	}
	if s.attempts >= s.reg.opts.RestartMax {
		// The text is shown to the model as the tool result, so it reads as
		// sentences rather than as a Go error string.
		return nil, &CallError{Kind: CallUnavailable, Msg: fmt.Sprintf("The MCP server '%s' is unavailable (exhausted). Its tools have been removed for this session.", s.name)}
	}
	if time.Now().Before(s.nextRetry) {
		return nil, &CallError{Kind: CallUnavailable, Msg: fmt.Sprintf("server '%s' is recovering (last error: %s). Try again later or use a different tool.", s.name, s.lastErr)}
	}
	return nil, nil
}

// markDead records that c failed and kills it, unless the server has moved
// on to another client meanwhile (compare-and-swap on the client).
func (s *server) markDead(c *Client, reason string) {
	s.mu.Lock()
	if s.client != c {
		s.mu.Unlock()
		return
	}
	s.client = nil
	s.attempts = 1
	s.lastErr = reason
	if s.attempts >= s.reg.opts.RestartMax {
		s.nextRetry = time.Now().Add(restartForever)
	} else {
		s.nextRetry = time.Now().Add(s.reg.backoff(1))
	}
	s.mu.Unlock()
	s.reg.log.Warn("mcp server marked dead", "server", s.name, "reason", reason)
	c.Close(false)
}

// backoff(n) = min(base·2^(n−1), cap) with ±20 % uniform jitter.
func (r *Registry) backoff(n int) time.Duration {
	d := r.opts.RestartBase << (n - 1)
	if d > r.opts.RestartCap || d <= 0 {
		d = r.opts.RestartCap
	}
	j := float64(d) * (0.8 + 0.4*rand.Float64())
	return time.Duration(j)
}

// HookTarget is a server that registered a hook tool and may receive it.
type HookTarget struct {
	Server string
	tool   *regTool
}

// HookTargets returns, in registration order, the allowed servers that
// registered "<server>__<hook>" at spawn time.
func (r *Registry) HookTargets(hook string) []HookTarget {
	if len(r.opts.HookServers) == 0 {
		return nil
	}
	var out []HookTarget
	for _, s := range r.servers {
		if !hookAllowed(r.opts.HookServers, s.name) {
			continue
		}
		if t := r.byQName[s.name+Sep+hook]; t != nil && t.hook {
			out = append(out, HookTarget{Server: s.name, tool: t})
		}
	}
	return out
}

func hookAllowed(allow []string, name string) bool {
	if len(allow) == 1 && allow[0] == "*" {
		return true
	}
	for _, a := range allow {
		if a == name {
			return true
		}
	}
	return false
}

// CallHook calls a hook with input {} within timeout. Hooks fail open, so
// the caller drops any error. A success resets the server's
// consecutive-timeout count; the second consecutive timeout kills the
// server. ctx should not be a session's cancel context.
func (r *Registry) CallHook(ctx context.Context, h HookTarget, timeout time.Duration) (*Result, error) {
	s := h.tool.srv
	res, err := s.call(ctx, h.tool, json.RawMessage(`{}`), timeout, "hook timeout", func(c *Client) {
		s.mu.Lock()
		s.timeouts++
		n := s.timeouts
		s.mu.Unlock()
		if n >= 2 {
			s.markDead(c, "hook timed out twice in a row")
		}
	})
	if err == nil {
		s.mu.Lock()
		s.timeouts = 0
		s.mu.Unlock()
	}
	return res, err
}

// Close stops every server: stdin closed, then TERM and KILL of each group.
func (r *Registry) Close() {
	var wg sync.WaitGroup
	for _, s := range r.servers {
		s.mu.Lock()
		c := s.client
		s.client = nil
		s.attempts = r.opts.RestartMax
		s.mu.Unlock()
		if c != nil {
			wg.Add(1)
			// Ends when the child is reaped.
			go func() {
				defer wg.Done()
				c.Close(true)
			}()
		}
	}
	wg.Wait()
}
