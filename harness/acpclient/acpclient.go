// Package acpclient is buzz-acp's client side of the Agent Client Protocol
// (ACP v1 and v2, spec §9): it starts an agent process, runs initialize,
// and drives its sessions — requests, session/prompt with the idle
// timeout, hard cap and cancel drain, native steering, permission
// requests, usage reports — over internal/jsonrpc on the agent's stdio.
//
// It does not choose which agent runs, what a prompt says, or what a turn's
// outcome means for the queue: the harness decides all of that. Raw
// traffic is recorded only through the taps its caller hands it.
package acpclient

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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/procgroup"
)

// clientProtocolVersion is what initialize offers (spec §9.2): 2, so that
// agents that take a top-level systemPrompt say so by echoing it.
const clientProtocolVersion = 2

// Spec says how to start an agent process.
type Spec struct {
	Path    string    // executable; without a slash it is looked up in PATH
	Argv0   string    // argv[0]; selects the identity for our own executable
	Args    []string  // after argv[0]
	Env     []string  // full environment
	Dir     string    // working directory; "" is the current one
	Stderr  io.Writer // where the agent's stderr goes; nil discards it
	Version string    // this harness's version, sent in initialize
	// MaxLine bounds one frame from the agent; zero is MaxLineBytes.
	MaxLine int
	// InitWait bounds initialize; zero is initTimeout.
	InitWait time.Duration
	// WriteTimeout bounds each write to the agent's stdin; zero is
	// agentWriteTimeout (tests shorten it).
	WriteTimeout time.Duration
	// TapWrite and TapRead, when set, see the raw ACP traffic to and from
	// the agent; nil records nothing.
	TapWrite, TapRead Tap
	// OnToolCall, when set, sees each tool_call and tool_call_update
	// the agent sends, on the connection's goroutine: it must not block.
	OnToolCall func(session string, u acp.Update)
	// Ask, when set, answers the agent's session/request_permission
	// (a person decides): it returns the optionId chosen. While it waits
	// the turn's idle timeout does not fire. Its context ends when the
	// turn is cancelled or AskTimeout passes; an error, that end or an
	// option the agent did not offer answers with the agent's reject
	// option, never an allow. ErrDecideAlone makes the client answer as
	// it does without Ask. Nil answers alone (allow_once).
	Ask func(ctx context.Context, req PermissionAsk) (string, error)
	// AskTimeout bounds one Ask; zero is DefaultAskTimeout.
	AskTimeout time.Duration
}

// Tap sees a byte stream as it passes. Feed is called by one goroutine at
// a time and must not keep p.
type Tap interface {
	Feed(p []byte)
}

// Agent is one running ACP agent and the client side of its connection.
type Agent struct {
	child  *procgroup.Child
	conn   *jsonrpc.Conn
	log    *slog.Logger
	done   chan struct{} // closed once the connection has ended
	exited chan struct{} // closed once the process has been waited for
	stdin  *os.File      // write end of the agent's stdin pipe
	// onToolCall is Spec.OnToolCall.
	onToolCall func(session string, u acp.Update)

	// stdinTimedOut is set when a write to stdin timed out; the
	// connection then ends and turns report TurnWriteTimeout.
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
	// images is the agent's promptCapabilities.image: prompts may carry
	// image content blocks.
	images bool

	activity   chan struct{} // a message arrived from the agent
	lastOutput atomic.Int64  // unix nanos of the last message

	ask        func(context.Context, PermissionAsk) (string, error) // Spec.Ask
	askTimeout time.Duration
	asking     atomic.Int32 // permission requests waiting on Ask: the idle timer waits too

	mu         sync.Mutex
	cancelling bool                          // answer permission requests "cancelled"
	asks       map[uint64]context.CancelFunc // Ask calls waiting; a cancel ends them
	toolCalls  map[string]*toolCallSeen      // session|toolCallId → what its updates said, for permission requests
	askSeq     uint64
	runID      string                    // goose active run id of the running prompt
	usage      map[string]*UsageSnapshot // latest usage report per session; nil until the first
	usageSeq   uint64                    // usage reports received
	usageCh    chan struct{}             // closed at the next usage report (UsageChanged); nil until asked for
	catalog    Catalog                   // models offered by the first session/new; nil until then
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

// FinalText is the text the agent wrote last in session's prompt, "" when
// it wrote none.
func (a *Agent) FinalText(session string) (text string, cut bool) {
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

// Spoke reports whether the agent has sent text, a thought or a tool call
// in session's running prompt.
func (a *Agent) Spoke(session string) bool {
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

// Start spawns the process and runs initialize.
func Start(ctx context.Context, s Spec, log *slog.Logger) (*Agent, error) {
	path := s.Path
	if !strings.Contains(path, "/") {
		if p, err := exec.LookPath(path); err == nil {
			path = p
		} else {
			return nil, fmt.Errorf("buzz-acp: find agent %q: %w", s.Path, err)
		}
	}
	cmd := &exec.Cmd{Path: path, Args: append([]string{s.Argv0}, s.Args...), Env: s.Env, Dir: s.Dir}
	// The agent's stderr passes through a pipe of our own that keeps its
	// last bytes: an agent that exits before initialize has usually said
	// why there, and that is what the person should be told.
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("buzz-acp: agent stderr pipe: %w", err)
	}
	tail := newStderrTail(errR, s.Stderr)
	cmd.Stderr = errW
	// The stdin pipe's write end takes write deadlines (tapWriter,
	// jsonrpc.Options.WriteTimeout). The agent dies with buzz-acp (on
	// Linux), whatever it does with stdin.
	child, err := procgroup.Start(cmd, procgroup.Pipes{Stdin: true, Stdout: true})
	errW.Close() // the child holds its own copy
	if err != nil {
		tail.stop(stderrTailWait)
		return nil, fmt.Errorf("buzz-acp: start agent %s: %w", filepath.Base(path), err)
	}
	stdin, stdout := child.Stdin, child.Stdout
	a := &Agent{child: child, stdin: stdin, done: make(chan struct{}), exited: make(chan struct{}), activity: make(chan struct{}, 1),
		log: log.With("pid", child.Pid()), onToolCall: s.OnToolCall, ask: s.Ask, askTimeout: orDefault(s.AskTimeout, DefaultAskTimeout)}
	var w io.Writer = stdin
	if s.TapWrite != nil {
		w = &tapWriter{f: stdin, tap: s.TapWrite}
	}
	var out io.Reader = stdout
	if s.TapRead != nil {
		out = tapReader{r: stdout, tap: s.TapRead}
	}
	maxLine, initWait, writeTimeout := orDefault(s.MaxLine, MaxLineBytes), orDefault(s.InitWait, initTimeout), orDefault(s.WriteTimeout, agentWriteTimeout)
	// spec §9.1: writes time out after 30 s. An agent that stops reading
	// fills the pipe; the connection's write timeout then ends it and
	// stdinExpired retires the agent like any other I/O failure.
	a.conn = jsonrpc.NewConn(out, w, jsonrpc.Options{MaxLineBytes: maxLine, OversizeFatal: true, Logger: a.log,
		WriteTimeout: writeTimeout, OnWriteTimeout: a.stdinExpired})
	// Serve ends when the agent's stdout reaches EOF (so no frame it wrote
	// is lost), it sends an oversize or non-UTF-8 frame, or Kill closes our
	// end of the pipe.
	go func() {
		err := a.conn.Serve(context.WithoutCancel(ctx), a.handle)
		if err != nil {
			a.log.Warn("agent connection ended", "err", err)
		}
		a.conn.Close()
		stdout.Close()
		close(a.done)
		<-child.Exited()
		tail.stop(killWait)
		close(a.exited)
	}()
	ictx, cancel := context.WithTimeout(ctx, initWait)
	defer cancel()
	caps := &acp.ClientCapabilities{Auth: &acp.AuthCapabilities{Terminal: true},
		Meta: &acp.ClientMeta{Goose: &acp.GooseCapabilities{CustomNotifications: true}, TerminalAuth: true}}
	info := &acp.Implementation{Name: "buzz-acp", Version: s.Version}
	// ACP v2 names the client's fields info and capabilities, v1
	// clientInfo and clientCapabilities. Both are sent: an agent picks the
	// version it speaks (at most the one offered) and reads its own names;
	// the other pair is an unknown field to it.
	params := acp.InitializeRequest{ProtocolVersion: clientProtocolVersion, Info: info, Capabilities: caps,
		ClientInfo: info, ClientCapabilities: caps}
	if err := a.Call(ictx, acp.MethodInitialize, params, &a.initRaw); err != nil {
		a.Kill()
		if said := tail.lastLine(); said != "" {
			return nil, fmt.Errorf("buzz-acp: initialize agent: %w; it said: %s", err, said)
		}
		return nil, fmt.Errorf("buzz-acp: initialize agent: %w", err)
	}
	res, err := readInitialize(a.initRaw)
	if err != nil {
		a.Kill()
		return nil, fmt.Errorf("buzz-acp: initialize agent: %w", err)
	}
	a.protocol = res.protocol
	a.name = res.name
	a.closeable = res.closeable
	a.systemPromptCap = res.systemPrompt
	a.steering = res.steering
	a.loadSession = res.loadSession
	a.images = res.images
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
	images       bool // agentCapabilities.promptCapabilities.image
}

// readInitialize decodes an initialize answer by the version the agent
// chose: v2 puts the agent's name and capabilities under info and
// capabilities (session capabilities under capabilities.session), v1 under
// agentInfo (or the older serverInfo) and agentCapabilities
// (agentCapabilities.sessionCapabilities). A missing protocolVersion is 1.
func readInitialize(raw json.RawMessage) (initReply, error) {
	var res acp.InitializeReply
	if err := json.Unmarshal(raw, &res); err != nil {
		return initReply{}, fmt.Errorf("decode reply: %w", err)
	}
	r := initReply{protocol: 1, name: "unknown", steering: res.Meta.Steering.Supported, loadSession: res.AgentCapabilities.LoadSession,
		images: res.AgentCapabilities.PromptCapabilities.Image}
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
	if p := res.Capabilities.Prompt; r.protocol >= 2 && p != nil {
		r.images = r.images || present(p.Image)
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

// Call is a request that fails fast when the agent is gone.
func (a *Agent) Call(ctx context.Context, method string, params, result any) error {
	errc := make(chan error, 1)
	go func() { errc <- a.conn.Call(ctx, method, params, result) }()
	select {
	case err := <-errc:
		return err
	case <-a.done:
		return ErrExited
	}
}

var ErrExited = errors.New("agent exited")

// CloseSession sends session/close for a session the harness is done
// with, when the agent takes it (agents keep a session's history and
// processes until told) and is still up. The call runs on its own
// goroutine, bounded by RequestTimeout, so no caller waits on the agent.
func (a *Agent) CloseSession(id string) {
	if !a.closeable || !a.Alive() {
		return
	}
	go func() { // ends with the call: answered, timed out, or the agent gone
		ctx, cancel := context.WithTimeout(context.Background(), RequestTimeout)
		defer cancel()
		if err := a.Call(ctx, acp.MethodSessionClose, acp.SessionParams{SessionID: id}, nil); err != nil {
			a.log.Debug("session/close", "session", id, "err", err)
		}
	}()
}

// ErrStdinTimeout is why a write to the agent's stdin failed when the agent
// did not read it within agentWriteTimeout.
var ErrStdinTimeout = errors.New("agent stopped reading its stdin")

// tapWriter records what is written to the agent's stdin. It keeps the
// pipe's write deadlines visible to the connection (jsonrpc.Options.WriteTimeout).
type tapWriter struct {
	f   *os.File
	tap Tap
}

func (w *tapWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if n > 0 {
		w.tap.Feed(b[:n])
	}
	return n, err
}

func (w *tapWriter) SetWriteDeadline(t time.Time) error { return w.f.SetWriteDeadline(t) }

// stdinExpired runs when a write to the agent's stdin timed out, before the
// connection ends (which fails the pending calls, so the running turn ends
// and the slot is respawned): closing stdin lets the agent see EOF.
func (a *Agent) stdinExpired() {
	if a.stdinTimedOut.Swap(true) {
		return
	}
	a.log.Error("agent did not read its stdin in time; tearing it down")
	a.stdin.Close()
}

// gone is the outcome of a prompt whose connection ended.
func (a *Agent) gone() Outcome {
	if a.stdinTimedOut.Load() {
		return Outcome{Result: TurnWriteTimeout, Err: ErrStdinTimeout}
	}
	return Outcome{Result: TurnExited, Err: ErrExited}
}

// Alive reports whether the connection is still up.
func (a *Agent) Alive() bool {
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// Kill ends the agent by procgroup's ladder (close stdin, SIGTERM the
// group, SIGKILL it) and waits, bounded, for its connection to end and its
// stderr to be read.
func (a *Agent) Kill() {
	a.child.Stop(procgroup.Ladder{Stdin: stdinGrace, Term: termGrace, Reap: killWait})
	a.conn.Close()
	a.child.Stdout.Close() // a Serve still reading, held open by a stray process, ends
	t := time.NewTimer(killWait)
	defer t.Stop()
	select {
	case <-a.exited:
	case <-t.C:
	}
}

func (a *Agent) touch() {
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
func (a *Agent) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method != acp.MethodSessionUpdate {
		a.touch()
	}
	switch req.Method {
	case acp.MethodSessionUpdate:
		var p acp.SessionNotification
		if json.Unmarshal(req.Params, &p) != nil {
			a.touch()
			return nil, nil
		}
		if p.Update.SessionUpdate != acp.UpdateKeepalive {
			a.touch()
		}
		if p.Update.SessionUpdate == acp.UpdateToolCall || p.Update.SessionUpdate == acp.UpdateToolCallUpdate {
			a.noteToolCall(p.SessionID, req.Params)
		}
		switch p.Update.SessionUpdate {
		case acp.UpdateAgentMessageChunk, acp.UpdateAgentThoughtChunk, acp.UpdateToolCall, acp.UpdateToolCallUpdate:
			if a.onToolCall != nil && (p.Update.SessionUpdate == acp.UpdateToolCall || p.Update.SessionUpdate == acp.UpdateToolCallUpdate) {
				a.onToolCall(p.SessionID, p.Update)
			}
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
				case p.Update.SessionUpdate == acp.UpdateAgentMessageChunk && p.Update.Content != nil && p.Update.Content.Type == "text":
					tt.add(p.Update.Content.Text)
				}
			}
			a.mu.Unlock()
		case acp.UpdateUsage:
			a.noteUsage(req.Params)
		case acp.UpdateState:
			if p.Update.State != "idle" || p.Update.StopReason == nil {
				break
			}
			a.mu.Lock()
			if a.idle != nil && a.idleSession == p.SessionID {
				select {
				case a.idle <- v2Stop{reason: *p.Update.StopReason, err: rpcError(p.Update.Error)}:
				default:
				}
			}
			a.mu.Unlock()
		case acp.UpdateSessionInfo:
			var info acp.SessionInfoNotification
			if json.Unmarshal(req.Params, &info) != nil || info.Update.Meta.Goose == nil {
				break
			}
			a.mu.Lock()
			if run := info.Update.Meta.Goose.ActiveRunID; run != nil {
				a.runID = *run
			} else {
				a.runID = ""
			}
			a.mu.Unlock()
		}
		return nil, nil
	case acp.MethodUsageUpdate:
		a.noteUsage(req.Params)
		return nil, nil
	case acp.MethodPermission:
		return a.permission(ctx, req.Params)
	}
	if req.IsNotification() {
		return nil, nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.MethodNotFound, "method not found: %s", req.Method)
}

// rpcError is the JSON-RPC error object raw, nil when there is none or it
// does not decode as one.
func rpcError(raw json.RawMessage) *jsonrpc.Error {
	var e *jsonrpc.Error
	if len(raw) == 0 || json.Unmarshal(raw, &e) != nil {
		return nil
	}
	return e
}

// choosePermission picks the allow_once option, else reject_once, by kind;
// option ids are never assumed.
func choosePermission(params json.RawMessage) (string, error) {
	var p acp.PermissionRequest
	if err := json.Unmarshal(params, &p); err != nil {
		return "", fmt.Errorf("decode permission options: %w", err)
	}
	for _, want := range []string{"allow_once", "reject_once"} {
		for _, o := range p.Options {
			if o.Kind != want {
				continue
			}
			if o.OptionID == "" {
				if want == "reject_once" {
					return "reject", nil
				}
				return "", errors.New("allow_once option without optionId")
			}
			return o.OptionID, nil
		}
	}
	return "", errors.New("no allow_once or reject_once option offered")
}

// Result is how a prompt ended.
type Result int

const (
	TurnOK            Result = iota
	TurnExited               // agent process or connection gone
	TurnIdle                 // idle timeout; cancelled and drained
	TurnHard                 // hard cap
	TurnDrainTimeout         // cancel did not finish in time
	TurnAgentError           // JSON-RPC error from the agent
	TurnProtocolError        // bad stop reason, undecodable reply
	TurnSignalled            // cancelled by a control signal, drained cleanly
	TurnWriteTimeout         // a write to the agent's stdin timed out
)

func (r Result) String() string {
	return [...]string{"ok", "agent exited", "idle timeout", "hard timeout", "cancel-drain timeout",
		"agent error", "protocol error", "cancelled", "stdin write timeout"}[r]
}

// Outcome is the result of one session/prompt.
type Outcome struct {
	Result Result
	Stop   acp.StopReason // with TurnOK
	Err    error          // why, for every other result
}

// validStop normalises a stop reason; ok is false for unknown ones.
func validStop(s string) (acp.StopReason, bool) {
	switch r := acp.StopReason(strings.ToLower(s)); r {
	case acp.StopEndTurn, acp.StopCancelled, acp.StopMaxTokens, acp.StopMaxTurnRequests, acp.StopRefusal:
		return r, true
	}
	return "", false
}

// Prompt runs session/prompt with the idle timeout and the hard deadline,
// and stops early when signal fires (spec §9.6, §9.8).
func (a *Agent) Prompt(ctx context.Context, sessionID string, blocks []acp.ContentBlock, idle time.Duration, hard time.Time, signal <-chan struct{}) Outcome {
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
		res acp.PromptResult
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
				r.res.StopReason = acp.StopReason(st.reason)
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
	finish := func(r *reply) Outcome {
		if r.err != nil {
			var rpcErr *jsonrpc.Error
			switch {
			case errors.As(r.err, &rpcErr):
				return Outcome{Result: TurnAgentError, Err: r.err}
			case errors.Is(r.err, jsonrpc.ErrWriteTimeout) || a.stdinTimedOut.Load():
				return Outcome{Result: TurnWriteTimeout, Err: r.err}
			case errors.Is(r.err, jsonrpc.ErrClosed), errors.Is(r.err, syscall.EPIPE):
				// A prompt written to an agent that died before the harness
				// saw it exit is the agent gone, not a protocol error: its
				// sessions stay loadable.
				return Outcome{Result: TurnExited, Err: r.err}
			}
			return Outcome{Result: TurnProtocolError, Err: r.err}
		}
		stop, ok := validStop(string(r.res.StopReason))
		if !ok {
			return Outcome{Result: TurnProtocolError, Err: fmt.Errorf("unknown stop reason %q", r.res.StopReason)}
		}
		return Outcome{Result: TurnOK, Stop: stop}
	}
	// drain sends session/cancel and waits for the prompt's reply.
	drain := func(why Result, deadline time.Time, window time.Duration) Outcome {
		a.cancelAsks()
		// A hung agent may have stopped reading stdin; the drain timers must
		// still fire, so the notification is written on its own goroutine
		// (the stdin write timeout, or Kill closing stdin, ends a blocked
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
				if o.Result == TurnOK || o.Result == TurnAgentError {
					if why == TurnSignalled {
						o.Result = TurnSignalled
					} else {
						o.Result = why
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
				return Outcome{Result: TurnDrainTimeout, Err: errors.New("agent did not finish cancelling")}
			case <-dl.C:
				return Outcome{Result: TurnDrainTimeout, Err: errors.New("agent did not finish cancelling")}
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
			if a.asking.Load() > 0 {
				// A person is being asked: waiting for them is activity.
				idleT.Reset(idle)
				continue
			}
			a.log.Warn("idle timeout; cancelling turn", "session", sessionID, "idle", idle)
			return drain(TurnIdle, later(hard, time.Now().Add(timeoutDrain)), timeoutDrain)
		case <-hardT.C:
			a.log.Warn("hard turn cap reached; cancelling turn", "session", sessionID)
			return drain(TurnHard, time.Now().Add(timeoutDrain), timeoutDrain)
		case <-signal:
			signal = nil
			return drain(TurnSignalled, time.Now().Add(controlGrace), controlGrace)
		case <-ctx.Done():
			return drain(TurnSignalled, time.Now().Add(controlGrace), controlGrace)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Steer tries a native, non-cancelling steer. ok reports the event was
// consumed; fallback says the caller should cancel and merge instead.
func (a *Agent) Steer(ctx context.Context, sessionID string, blocks []acp.ContentBlock) (ok, fallback bool) {
	a.mu.Lock()
	runID := a.runID
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	switch {
	case runID != "":
		err := a.Call(ctx, acp.MethodSteer, acp.SteerParams{SessionID: sessionID, ExpectedRunID: runID, Prompt: blocks}, nil)
		return steerVerdict(err, true, "")
	case a.steering:
		var res acp.SteeringResult
		err := a.Call(ctx, acp.MethodSteering, acp.SteerParams{SessionID: sessionID, Prompt: blocks}, &res)
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

// TransportClass reports whether err means the connection is unusable.
func TransportClass(err error) bool {
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
			return clipRunes(l, maxStderrQuote)
		}
	}
	return ""
}

// tapReader passes reads through, feeding them to a tap.
type tapReader struct {
	r   io.Reader
	tap Tap
}

func (r tapReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.tap.Feed(p[:n])
	}
	return n, err
}

// orDefault is v, or def when v is zero.
func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
