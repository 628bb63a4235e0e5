package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/proc"
	"buzzbox/internal/procgroup"
	"buzzbox/internal/workspace"
)

// clientProtocolVersion is what initialize offers (spec §9.2): 2, so that
// agents that take a top-level systemPrompt say so by echoing it.
const clientProtocolVersion = 2

// ACP methods the harness uses beyond internal/acp's list.
const (
	methodSetConfigOption = "session/set_config_option"
	methodPermission      = "session/request_permission"
	methodGooseSysPrompt  = "_goose/unstable/session/system-prompt/set"
	methodSteering        = "_session/steering"
	methodSessionClose    = "session/close"
	// updateState is ACP v2's session/update kind that reports a
	// session running or idle (with the stop reason).
	updateState = "state_update"
)

// agentSpec says how to start an agent process.
type agentSpec struct {
	path     string   // executable
	argv0    string   // argv[0]; selects the identity for our own executable
	args     []string // after argv[0]
	env      []string // full environment
	dir      string
	stderr   io.Writer
	version  string
	maxLine  int
	initWait time.Duration
	// writeTimeout bounds each write to the agent's stdin
	// (agentWriteTimeout; tests shorten it).
	writeTimeout time.Duration
	// tapWrite and tapRead, when set, record the raw ACP traffic to and
	// from the agent as observer frames; nil records nothing.
	tapWrite, tapRead *acpTap
}

// agentSpecFor resolves the configured command: the bare name buzz-agent
// runs this executable under that name.
func agentSpecFor(c *Config, env proc.Env, version string) agentSpec {
	s := agentSpec{path: c.AgentCommand, argv0: c.AgentCommand, args: c.AgentArgs, dir: env.Dir,
		stderr: env.Err(), version: version, maxLine: maxAgentLineBytes, initWait: initTimeout,
		writeTimeout: agentWriteTimeout}
	if c.AgentCommand == "buzz-agent" && env.Exe != "" {
		s.path = env.Exe
	}
	if c.AgentIdentity == "codex" || c.AgentIdentity == "codex-acp" {
		s.args = codexNetworkArgs(s.args)
	}
	environ := append([]string(nil), env.Environ...)
	// The agent's own buzz CLI reads these; flags given to the harness
	// reach it too (the parent's environment wins when it has them).
	if _, ok := env.LookupEnv(workspace.EnvRelayURL); !ok && c.RelayURL != "" {
		environ = append(environ, workspace.EnvRelayURL+"="+c.RelayURL)
	}
	// buzz-agent's shell is the sidecar's, which reads the key from
	// MCPKeyFile; other agents run the buzz CLI in shells of their own.
	keyInFile := c.MCPKeyFile != "" && c.AgentCommand == "buzz-agent"
	if keyInFile {
		// Nor may it inherit the harness's own copy, which buzz-agent would
		// pass on to its MCP servers' environments.
		environ = withoutEnv(environ, workspace.EnvPrivateKey, workspace.EnvNostrPrivateKey)
	}
	if _, ok := env.LookupEnv(workspace.EnvPrivateKey); !ok && c.Secret != nil && !keyInFile {
		if sk, err := c.Secret.AppendHex(nil); err == nil {
			environ = append(environ, workspace.EnvPrivateKey+"="+string(sk))
		}
	}
	for _, kv := range c.AgentEnv {
		k, v, _ := strings.Cut(kv, "=")
		environ = proc.WithEnv(environ, k, v)
	}
	s.env = environ
	return s
}

// withoutEnv returns environ without the variables named.
func withoutEnv(environ []string, names ...string) []string {
	out := environ[:0:0]
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}

// codexNetworkOverride lets commands in codex's workspace-write sandbox
// reach the network, so the agent's buzz CLI can reach the relay. codex-acp
// 0.16 does not read CODEX_CONFIG (which the spec sets too); it takes the
// same setting as a -c override.
const codexNetworkOverride = "sandbox_workspace_write.network_access=true"

func codexNetworkArgs(args []string) []string {
	for _, a := range args {
		if strings.Contains(a, "network_access") {
			return args
		}
	}
	return append(append([]string{}, args...), "-c", codexNetworkOverride)
}

// agentProc is one running ACP agent and the client side of its connection.
type agentProc struct {
	cmd    *exec.Cmd
	conn   *jsonrpc.Conn
	log    *slog.Logger
	done   chan struct{} // closed once the connection has ended
	exited chan struct{} // closed once the process has been waited for
	stdin  *os.File      // write end of the agent's stdin pipe

	// stdinTimedOut is set when a write to stdin timed out; the
	// connection then ends and turns report turnWriteTimeout.
	stdinTimedOut atomic.Bool

	initRaw  json.RawMessage // the initialize reply
	name     string          // agentInfo.name, trimmed and lowercased
	protocol int
	steering bool
	// closeable: the agent takes session/close (v1
	// agentCapabilities.sessionCapabilities.close, or any v2 agent
	// with session capabilities).
	closeable bool
	// systemPromptCap: the agent advertises the session systemPrompt
	// capability ({mode, content} in session/new).
	systemPromptCap bool
	goose           int // goose system-prompt extension: 0 untried, 1 works, -1 unsupported
	// loadSession is the agent's agentCapabilities.loadSession: a session
	// it made before a restart can be taken up again with session/load.
	loadSession bool

	activity   chan struct{} // a message arrived from the agent
	lastOutput atomic.Int64  // unix nanos of the last message

	mu         sync.Mutex
	cancelling bool                      // answer permission requests "cancelled"
	runID      string                    // goose active run id of the running prompt
	usage      map[string]*usageSnapshot // latest usage report per session; nil until the first
	usageSeq   uint64                    // usage reports received
	catalog    *modelCatalog             // models offered by the first session/new; nil until then
	text       *turnText                 // the running prompt's agent text; nil outside a prompt
	// idle takes the stop reason of a v2 agent's idle state_update for
	// the running prompt's session (v2 answers session/prompt with a
	// messageId once the message is in, and reports the end this way).
	idle        chan v2Stop
	idleSession string
}

// v2Stop is how an ACP v2 agent said a prompt's work ended.
type v2Stop struct {
	reason string
	err    *jsonrpc.Error // with reason "error", when the agent said why
}

// turnText collects one prompt's agent_message_chunk text for the reply
// guard, split where a tool call starts: the last non-empty piece is the
// turn's final text.
type turnText struct {
	session   string
	cur, last strings.Builder
	cut       bool            // a piece reached maxFinalText; the rest was dropped
	tools     map[string]bool // v2 tool call ids seen
	spoke     bool            // the agent sent text, a thought or a tool call
}

func (tt *turnText) add(s string) {
	if room := maxFinalText - tt.cur.Len(); len(s) > room {
		s = truncUTF8(s, max(room, 0))
		tt.cut = true
	}
	tt.cur.WriteString(s)
}

// breakPiece ends the current piece at a tool call.
func (tt *turnText) breakPiece() {
	if strings.TrimSpace(tt.cur.String()) != "" {
		tt.last.Reset()
		tt.last.WriteString(tt.cur.String())
	}
	tt.cur.Reset()
}

// finalText is the text the agent wrote last in session's prompt, "" when
// it wrote none.
func (a *agentProc) finalText(session string) (text string, cut bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	tt := a.text
	if tt == nil || tt.session != session {
		return "", false
	}
	if t := strings.TrimSpace(tt.cur.String()); t != "" {
		return t, tt.cut
	}
	return strings.TrimSpace(tt.last.String()), tt.cut
}

// spoke reports whether the agent has sent text, a thought or a tool call
// in session's running prompt.
func (a *agentProc) spoke(session string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.text != nil && a.text.session == session && a.text.spoke
}

// truncUTF8 cuts s to at most n bytes without splitting a character.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// startAgent spawns the process and runs initialize.
func startAgent(ctx context.Context, s agentSpec, log *slog.Logger) (*agentProc, error) {
	path := s.path
	if !strings.Contains(path, "/") {
		if p, err := exec.LookPath(path); err == nil {
			path = p
		} else {
			return nil, fmt.Errorf("buzz-acp: find agent %q: %w", s.path, err)
		}
	}
	cmd := &exec.Cmd{Path: path, Args: append([]string{s.argv0}, s.args...), Env: s.env, Dir: s.dir, WaitDelay: killWait}
	procgroup.Set(cmd)
	// The agent's stderr passes through a pipe of our own that keeps its
	// last bytes: an agent that exits before initialize has usually said
	// why there, and that is what the person should be told.
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("buzz-acp: agent stderr pipe: %w", err)
	}
	tail := newStderrTail(errR, s.stderr)
	defer errW.Close() // the child holds its own copy
	cmd.Stderr = errW
	// Our own pipe rather than StdinPipe: its write end must take write
	// deadlines (stdinWriter).
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("buzz-acp: agent stdin pipe: %w", err)
	}
	cmd.Stdin = stdinR
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdinR.Close()
		stdin.Close()
		errW.Close()
		tail.stop(stderrTailWait)
		return nil, fmt.Errorf("buzz-acp: agent stdout pipe: %w", err)
	}
	// proc.Start: the agent dies with buzz-acp, whatever it does with stdin.
	err = proc.Start(cmd)
	stdinR.Close() // the child holds its own copy
	errW.Close()
	if err != nil {
		stdin.Close()
		tail.stop(stderrTailWait)
		return nil, fmt.Errorf("buzz-acp: start agent %s: %w", filepath.Base(path), err)
	}
	a := &agentProc{cmd: cmd, stdin: stdin, done: make(chan struct{}), exited: make(chan struct{}), activity: make(chan struct{}, 1),
		log: log.With("pid", cmd.Process.Pid)}
	var w io.Writer = stdin
	if s.tapWrite != nil {
		w = &tapWriter{f: stdin, tap: s.tapWrite}
	}
	var out io.Reader = stdout
	if s.tapRead != nil {
		out = tapReader{r: stdout, tap: s.tapRead}
	}
	// spec §9.1: writes time out after 30 s. An agent that stops reading
	// fills the pipe; the connection's write timeout then ends it and
	// stdinExpired retires the agent like any other I/O failure.
	a.conn = jsonrpc.NewConn(out, w, jsonrpc.Options{MaxLineBytes: s.maxLine, OversizeFatal: true, Logger: a.log,
		WriteTimeout: s.writeTimeout, OnWriteTimeout: a.stdinExpired})
	// Serve ends when the agent closes stdout, sends an oversize or
	// non-UTF-8 frame, or kill closes the connection; the process is
	// waited for only after that, so no frame it wrote is lost.
	go func() {
		err := a.conn.Serve(context.WithoutCancel(ctx), a.handle)
		if err != nil {
			a.log.Warn("agent connection ended", "err", err)
		}
		a.conn.Close()
		close(a.done)
		a.cmd.Wait()
		tail.stop(killWait)
		close(a.exited)
	}()
	ictx, cancel := context.WithTimeout(ctx, s.initWait)
	defer cancel()
	caps := map[string]any{
		"auth":  map[string]any{"terminal": true},
		"_meta": map[string]any{"goose": map[string]any{"customNotifications": true}, "terminal-auth": true},
	}
	info := map[string]any{"name": "buzz-acp", "version": s.version}
	// ACP v2 names the client's fields info and capabilities, v1
	// clientInfo and clientCapabilities. Both are sent: an agent picks the
	// version it speaks (at most the one offered) and reads its own names;
	// the other pair is an unknown field to it.
	params := map[string]any{
		"protocolVersion":    clientProtocolVersion,
		"info":               info,
		"capabilities":       caps,
		"clientInfo":         info,
		"clientCapabilities": caps,
	}
	if err := a.call(ictx, acp.MethodInitialize, params, &a.initRaw); err != nil {
		a.kill()
		if said := tail.lastLine(); said != "" {
			return nil, fmt.Errorf("buzz-acp: initialize agent: %w; it said: %s", err, said)
		}
		return nil, fmt.Errorf("buzz-acp: initialize agent: %w", err)
	}
	res, err := readInitialize(a.initRaw)
	if err != nil {
		a.kill()
		return nil, fmt.Errorf("buzz-acp: initialize agent: %w", err)
	}
	a.protocol = res.protocol
	a.name = res.name
	a.closeable = res.closeable
	a.systemPromptCap = res.systemPrompt
	a.steering = res.steering
	a.loadSession = res.loadSession
	a.log = a.log.With("agent", a.name)
	a.log.Info("agent ready", "protocol", a.protocol, "steering", a.steering)
	return a, nil
}

// initReply is what the harness reads from an initialize answer.
type initReply struct {
	protocol     int
	name         string // agent's name, trimmed and lowercased; "unknown" when it gave none
	steering     bool
	closeable    bool
	systemPrompt bool
	loadSession  bool // v1 agentCapabilities.loadSession; tried with any v2 agent
}

// readInitialize decodes an initialize answer by the version the agent
// chose: v2 puts the agent's name and capabilities under info and
// capabilities (session capabilities under capabilities.session), v1 under
// agentInfo (or the older serverInfo) and agentCapabilities
// (agentCapabilities.sessionCapabilities). A missing protocolVersion is 1.
func readInitialize(raw json.RawMessage) (initReply, error) {
	type sessionCaps struct {
		Close        json.RawMessage `json:"close"`
		SystemPrompt json.RawMessage `json:"systemPrompt"`
	}
	var res struct {
		ProtocolVersion *int                `json:"protocolVersion"`
		Info            *acp.Implementation `json:"info"`
		AgentInfo       *acp.Implementation `json:"agentInfo"`
		ServerInfo      *acp.Implementation `json:"serverInfo"`
		Capabilities    struct {
			Session *sessionCaps `json:"session"`
		} `json:"capabilities"`
		AgentCapabilities struct {
			LoadSession         bool         `json:"loadSession"`
			SessionCapabilities *sessionCaps `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
		Meta struct {
			Steering struct {
				Supported bool `json:"supported"`
			} `json:"steering"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return initReply{}, fmt.Errorf("decode reply: %w", err)
	}
	r := initReply{protocol: 1, name: "unknown", steering: res.Meta.Steering.Supported, loadSession: res.AgentCapabilities.LoadSession}
	if res.ProtocolVersion != nil {
		r.protocol = *res.ProtocolVersion
	}
	if r.protocol < 1 {
		return initReply{}, fmt.Errorf("the agent answered protocol version %d; ACP versions start at 1", r.protocol)
	}
	if r.protocol > clientProtocolVersion {
		return initReply{}, fmt.Errorf("the agent chose protocol version %d, newer than the %d offered; use an agent speaking ACP 1 or 2", r.protocol, clientProtocolVersion)
	}
	names := []*acp.Implementation{res.AgentInfo, res.ServerInfo, res.Info}
	caps := res.AgentCapabilities.SessionCapabilities
	if r.protocol >= 2 {
		names = []*acp.Implementation{res.Info, res.AgentInfo, res.ServerInfo}
		if res.Capabilities.Session != nil {
			caps = res.Capabilities.Session
			// v2: any session capabilities mean the baseline
			// session methods, session/close among them. v2 names no
			// session/load; it is tried (buzz-agent takes it under
			// both versions) and a refusal opens a new session.
			r.closeable = true
			r.loadSession = true
		}
	}
	for _, n := range names {
		if n != nil && strings.TrimSpace(n.Name) != "" {
			r.name = strings.ToLower(strings.TrimSpace(n.Name))
			break
		}
	}
	if caps != nil {
		r.closeable = r.closeable || present(caps.Close)
		r.systemPrompt = present(caps.SystemPrompt)
	}
	return r, nil
}

// present reports whether a capability marker is set (an object, not null).
func present(m json.RawMessage) bool {
	return len(m) > 0 && string(m) != "null" && string(m) != "false"
}

// call is a request that fails fast when the agent is gone.
func (a *agentProc) call(ctx context.Context, method string, params, result any) error {
	errc := make(chan error, 1)
	go func() { errc <- a.conn.Call(ctx, method, params, result) }()
	select {
	case err := <-errc:
		return err
	case <-a.done:
		return errAgentExited
	}
}

var errAgentExited = errors.New("agent exited")

// closeSession sends session/close for a session the harness is done
// with, when the agent takes it (agents keep a session's history and
// processes until told) and is still up. The call runs on its own
// goroutine, bounded by requestTimeout, so no caller waits on the agent.
func (a *agentProc) closeSession(id string) {
	if !a.closeable || !a.alive() {
		return
	}
	go func() { // ends with the call: answered, timed out, or the agent gone
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		if err := a.call(ctx, methodSessionClose, map[string]any{"sessionId": id}, nil); err != nil {
			a.log.Debug("session/close", "session", id, "err", err)
		}
	}()
}

// errStdinTimeout is why a write to the agent's stdin failed when the agent
// did not read it within agentWriteTimeout.
var errStdinTimeout = errors.New("agent stopped reading its stdin")

// tapWriter records what is written to the agent's stdin. It keeps the
// pipe's write deadlines visible to the connection (jsonrpc.Options.WriteTimeout).
type tapWriter struct {
	f   *os.File
	tap *acpTap
}

func (w *tapWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if n > 0 {
		w.tap.feed(b[:n])
	}
	return n, err
}

func (w *tapWriter) SetWriteDeadline(t time.Time) error { return w.f.SetWriteDeadline(t) }

// stdinExpired runs when a write to the agent's stdin timed out, before the
// connection ends (which fails the pending calls, so the running turn ends
// and the slot is respawned): closing stdin lets the agent see EOF.
func (a *agentProc) stdinExpired() {
	if a.stdinTimedOut.Swap(true) {
		return
	}
	a.log.Error("agent did not read its stdin in time; tearing it down")
	a.stdin.Close()
}

// gone is the outcome of a prompt whose connection ended.
func (a *agentProc) gone() promptOutcome {
	if a.stdinTimedOut.Load() {
		return promptOutcome{result: turnWriteTimeout, err: errStdinTimeout}
	}
	return promptOutcome{result: turnExited, err: errAgentExited}
}

// alive reports whether the connection is still up.
func (a *agentProc) alive() bool {
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// kill ends the agent: close stdin, then TERM and KILL its process group,
// and waits (bounded) for it to be reaped.
func (a *agentProc) kill() {
	a.stdin.Close()
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-a.exited:
			return true
		case <-t.C:
			return false
		}
	}
	if !wait(stdinGrace) {
		procgroup.Signal(a.cmd.Process.Pid, syscall.SIGTERM)
		a.conn.Close()
		if !wait(termGrace) {
			procgroup.Signal(a.cmd.Process.Pid, syscall.SIGKILL)
			wait(killWait)
		}
	}
	procgroup.Signal(a.cmd.Process.Pid, syscall.SIGKILL) // anything the agent left behind in its group
}

// stdinGrace and termGrace pace kill: the agent gets a moment to exit on
// its own after EOF, then after SIGTERM, before SIGKILL.
const (
	stdinGrace = 2 * time.Second
	termGrace  = time.Second
)

func (a *agentProc) touch() {
	a.lastOutput.Store(time.Now().UnixNano())
	select {
	case a.activity <- struct{}{}:
	default:
	}
}

// handle answers agent → client traffic (spec §9.7). Every message counts
// as activity for the idle timeout (spec §9.6) except a keepalive update,
// which says only that the agent is waiting: buzz-agent sends one every
// 30 s while its model is silent, and bounds that wait itself
// (BUZZ_AGENT_LLM_TIMEOUT_SECS, BUZZ_AGENT_LLM_MAX_CALL_SECS).
func (a *agentProc) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method != acp.MethodSessionUpdate {
		a.touch()
	}
	switch req.Method {
	case acp.MethodSessionUpdate:
		var p struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				SessionUpdate string           `json:"sessionUpdate"`
				Content       acp.ContentBlock `json:"content"`
				ToolCallID    string           `json:"toolCallId"`
				State         string           `json:"state"`
				StopReason    *string          `json:"stopReason"`
				Error         *jsonrpc.Error   `json:"error"`
				Meta          struct {
					Goose *struct {
						ActiveRunID *string `json:"activeRunId"`
					} `json:"goose"`
				} `json:"_meta"`
			} `json:"update"`
		}
		if json.Unmarshal(req.Params, &p) != nil {
			a.touch()
			return nil, nil
		}
		if p.Update.SessionUpdate != acp.UpdateKeepalive {
			a.touch()
		}
		switch p.Update.SessionUpdate {
		case acp.UpdateAgentMessageChunk, acp.UpdateAgentThoughtChunk, acp.UpdateToolCall, acp.UpdateToolCallUpdate:
			a.mu.Lock()
			if tt := a.text; tt != nil && tt.session == p.SessionID {
				tt.spoke = true
				switch {
				case p.Update.SessionUpdate == acp.UpdateToolCall:
					tt.breakPiece()
				case p.Update.SessionUpdate == acp.UpdateToolCallUpdate && a.protocol >= 2 && !tt.tools[p.Update.ToolCallID]:
					// v2 has no tool_call: a call starts with its first update.
					if tt.tools == nil {
						tt.tools = map[string]bool{}
					}
					tt.tools[p.Update.ToolCallID] = true
					tt.breakPiece()
				case p.Update.SessionUpdate == acp.UpdateAgentMessageChunk && p.Update.Content.Type == "text":
					tt.add(p.Update.Content.Text)
				}
			}
			a.mu.Unlock()
		case acp.UpdateUsage:
			a.noteUsage(req.Params)
		case updateState:
			if p.Update.State != "idle" || p.Update.StopReason == nil {
				break
			}
			a.mu.Lock()
			if a.idle != nil && a.idleSession == p.SessionID {
				select {
				case a.idle <- v2Stop{reason: *p.Update.StopReason, err: p.Update.Error}:
				default:
				}
			}
			a.mu.Unlock()
		case acp.UpdateSessionInfo:
			if p.Update.Meta.Goose == nil {
				break
			}
			a.mu.Lock()
			if p.Update.Meta.Goose.ActiveRunID != nil {
				a.runID = *p.Update.Meta.Goose.ActiveRunID
			} else {
				a.runID = ""
			}
			a.mu.Unlock()
		}
		return nil, nil
	case acp.MethodUsageUpdate:
		a.noteUsage(req.Params)
		return nil, nil
	case methodPermission:
		a.mu.Lock()
		cancelling := a.cancelling
		a.mu.Unlock()
		if cancelling {
			return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
		}
		id, err := choosePermission(req.Params)
		if err != nil {
			a.log.Error("permission request", "err", err)
			return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "%v", err)
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": id}}, nil
	}
	if req.IsNotification() {
		return nil, nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.MethodNotFound, "method not found: %s", req.Method)
}

// choosePermission picks the allow_once option, else reject_once, by kind;
// option ids are never assumed.
func choosePermission(params json.RawMessage) (string, error) {
	var p struct {
		Options []struct {
			OptionID *string `json:"optionId"`
			Kind     string  `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", fmt.Errorf("decode permission options: %w", err)
	}
	for _, want := range []string{"allow_once", "reject_once"} {
		for _, o := range p.Options {
			if o.Kind != want {
				continue
			}
			if o.OptionID == nil {
				if want == "reject_once" {
					return "reject", nil
				}
				return "", errors.New("allow_once option without optionId")
			}
			return *o.OptionID, nil
		}
	}
	return "", errors.New("no allow_once or reject_once option offered")
}

// turnResult is how a prompt ended.
type turnResult int

const (
	turnOK            turnResult = iota
	turnExited                   // agent process or connection gone
	turnIdle                     // idle timeout; cancelled and drained
	turnHard                     // hard cap
	turnDrainTimeout             // cancel did not finish in time
	turnAgentError               // JSON-RPC error from the agent
	turnProtocolError            // bad stop reason, undecodable reply
	turnSignalled                // cancelled by a control signal, drained cleanly
	turnWriteTimeout             // a write to the agent's stdin timed out
)

func (r turnResult) String() string {
	return [...]string{"ok", "agent exited", "idle timeout", "hard timeout", "cancel-drain timeout",
		"agent error", "protocol error", "cancelled", "stdin write timeout"}[r]
}

// promptOutcome is the result of one session/prompt.
type promptOutcome struct {
	result turnResult
	stop   acp.StopReason
	err    error
}

// validStop normalises a stop reason; ok is false for unknown ones.
func validStop(s string) (acp.StopReason, bool) {
	switch r := acp.StopReason(strings.ToLower(s)); r {
	case acp.StopEndTurn, acp.StopCancelled, acp.StopMaxTokens, acp.StopMaxTurnRequests, acp.StopRefusal:
		return r, true
	}
	return "", false
}

// prompt runs session/prompt with the idle timeout and the hard deadline,
// and stops early when signal fires (spec §9.6, §9.8).
func (a *agentProc) prompt(ctx context.Context, sessionID string, blocks []acp.ContentBlock, idle time.Duration, hard time.Time, signal <-chan struct{}) promptOutcome {
	a.mu.Lock()
	a.cancelling = false
	a.runID = ""
	a.text = &turnText{session: sessionID}
	idleStop := make(chan v2Stop, 1)
	a.idle, a.idleSession = idleStop, sessionID
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.idle == idleStop {
			a.idle, a.idleSession = nil, ""
		}
		a.mu.Unlock()
	}()
	type reply struct {
		res struct {
			StopReason string `json:"stopReason"`
			MessageID  string `json:"messageId"`
		}
		err error
	}
	done := make(chan *reply, 1)
	// The call outlives ctx: a cancelled turn still waits (bounded) for
	// the agent's own answer to session/cancel.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	// Ends when the reply comes, the connection closes or pctx ends.
	go func() {
		r := &reply{}
		r.err = a.conn.Call(pctx, acp.MethodSessionPrompt, acp.PromptParams{SessionID: sessionID, Prompt: blocks}, &r.res)
		if r.err == nil && r.res.StopReason == "" && a.protocol >= 2 {
			// v2: the reply says the message is in; the idle
			// state_update says how the work ended.
			select {
			case st := <-idleStop:
				r.res.StopReason = st.reason
				switch {
				case st.reason != "error":
				case st.err != nil:
					r.err = st.err
				default:
					r.err = &jsonrpc.Error{Code: jsonrpc.InternalError, Message: "the agent stopped with an error it did not describe"}
				}
			case <-pctx.Done():
				r.err = pctx.Err()
			case <-a.done:
				r.err = jsonrpc.ErrClosed
			}
		}
		done <- r
	}()
	finish := func(r *reply) promptOutcome {
		if r.err != nil {
			var rpcErr *jsonrpc.Error
			switch {
			case errors.As(r.err, &rpcErr):
				return promptOutcome{result: turnAgentError, err: r.err}
			case errors.Is(r.err, jsonrpc.ErrWriteTimeout) || a.stdinTimedOut.Load():
				return promptOutcome{result: turnWriteTimeout, err: r.err}
			case errors.Is(r.err, jsonrpc.ErrClosed):
				return promptOutcome{result: turnExited, err: r.err}
			}
			return promptOutcome{result: turnProtocolError, err: r.err}
		}
		stop, ok := validStop(r.res.StopReason)
		if !ok {
			return promptOutcome{result: turnProtocolError, err: fmt.Errorf("unknown stop reason %q", r.res.StopReason)}
		}
		return promptOutcome{result: turnOK, stop: stop}
	}
	// drain sends session/cancel and waits for the prompt's reply.
	drain := func(why turnResult, deadline time.Time, window time.Duration) promptOutcome {
		a.mu.Lock()
		a.cancelling = true
		a.mu.Unlock()
		// A hung agent may have stopped reading stdin; the drain timers must
		// still fire, so the notification is written on its own goroutine
		// (the stdin write timeout, or kill closing stdin, ends a blocked
		// write).
		go a.conn.Notify(acp.MethodSessionCancel, acp.CancelParams{SessionID: sessionID})
		dl := time.NewTimer(time.Until(deadline))
		defer dl.Stop()
		win := time.NewTimer(window)
		defer win.Stop()
		for {
			select {
			case r := <-done:
				o := finish(r)
				if o.result == turnOK || o.result == turnAgentError {
					if why == turnSignalled {
						o.result = turnSignalled
					} else {
						o.result = why
					}
				}
				return o
			case <-a.activity:
				if !win.Stop() {
					<-win.C
				}
				win.Reset(window)
			case <-a.done:
				return a.gone()
			case <-win.C:
				return promptOutcome{result: turnDrainTimeout, err: errors.New("agent did not finish cancelling")}
			case <-dl.C:
				return promptOutcome{result: turnDrainTimeout, err: errors.New("agent did not finish cancelling")}
			}
		}
	}
	// Drop activity left over from before the prompt.
	select {
	case <-a.activity:
	default:
	}
	idleT := time.NewTimer(idle)
	defer idleT.Stop()
	hardT := time.NewTimer(time.Until(hard))
	defer hardT.Stop()
	for {
		select {
		case r := <-done:
			return finish(r)
		case <-a.done:
			select {
			case r := <-done:
				return finish(r)
			default:
			}
			return a.gone()
		case <-a.activity:
			if !idleT.Stop() {
				select {
				case <-idleT.C:
				default:
				}
			}
			idleT.Reset(idle)
		case <-idleT.C:
			a.log.Warn("idle timeout; cancelling turn", "session", sessionID, "idle", idle)
			return drain(turnIdle, later(hard, time.Now().Add(timeoutDrain)), timeoutDrain)
		case <-hardT.C:
			a.log.Warn("hard turn cap reached; cancelling turn", "session", sessionID)
			return drain(turnHard, time.Now().Add(timeoutDrain), timeoutDrain)
		case <-signal:
			signal = nil
			return drain(turnSignalled, time.Now().Add(controlGrace), controlGrace)
		case <-ctx.Done():
			return drain(turnSignalled, time.Now().Add(controlGrace), controlGrace)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// steer tries a native, non-cancelling steer. ok reports the event was
// consumed; fallback says the caller should cancel and merge instead.
func (a *agentProc) steer(ctx context.Context, sessionID string, blocks []acp.ContentBlock) (ok, fallback bool) {
	a.mu.Lock()
	runID := a.runID
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	switch {
	case runID != "":
		err := a.call(ctx, acp.MethodSteer, map[string]any{"sessionId": sessionID, "expectedRunId": runID, "prompt": blocks}, nil)
		return steerVerdict(err, true, "")
	case a.steering:
		var res struct {
			Outcome string `json:"outcome"`
		}
		err := a.call(ctx, methodSteering, map[string]any{"sessionId": sessionID, "prompt": blocks}, &res)
		return steerVerdict(err, false, res.Outcome)
	}
	return false, true // no transport
}

func steerVerdict(err error, goose bool, outcome string) (ok, fallback bool) {
	if err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && rpcErr.Code != jsonrpc.MethodNotFound {
			return false, false
		}
		return false, true
	}
	if goose || outcome == "injected" || outcome == "startedNewTurn" {
		return true, false
	}
	return false, true
}

// transportClass reports whether err means the connection is unusable.
func transportClass(err error) bool {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return false
	}
	return err != nil
}

// stderrTail copies an agent's stderr to its destination and keeps the
// last maxStderrTail bytes. Its goroutine ends at EOF, once the agent and
// every process that inherited its stderr have closed it, or when stop
// gives up waiting and closes the read end.
type stderrTail struct {
	r    *os.File
	mu   sync.Mutex
	buf  []byte
	done chan struct{}
}

func newStderrTail(r *os.File, dst io.Writer) *stderrTail {
	t := &stderrTail{r: r, done: make(chan struct{})}
	if dst == nil {
		dst = io.Discard
	}
	go func() { // ends at EOF or when stop closes r
		defer close(t.done)
		b := make([]byte, maxStderrTail)
		for {
			n, err := r.Read(b)
			if n > 0 {
				dst.Write(b[:n])
				t.mu.Lock()
				t.buf = append(t.buf, b[:n]...)
				if len(t.buf) > maxStderrTail {
					t.buf = append(t.buf[:0], t.buf[len(t.buf)-maxStderrTail:]...)
				}
				t.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	return t
}

// stop waits up to d for EOF, then closes the read end, and returns once
// the copy has ended.
func (t *stderrTail) stop(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-t.done:
	case <-timer.C:
	}
	t.r.Close()
	<-t.done
}

// lastLine is the last non-empty line the agent wrote, once its stderr
// has ended (or stderrTailWait has passed), clipped for a notice.
func (t *stderrTail) lastLine() string {
	timer := time.NewTimer(stderrTailWait)
	defer timer.Stop()
	select {
	case <-t.done:
	case <-timer.C:
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.ToValidUTF8(string(t.buf), "\uFFFD"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return clipRunes(l, maxNoticeCause)
		}
	}
	return ""
}
