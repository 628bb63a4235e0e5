package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"buzzbox/agent/llm"
	"buzzbox/agent/mcpclient"
	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/proc"
)

// ACP error codes beyond the JSON-RPC ones.
const (
	codeAgent         = -32000 // llm, mcp, cancelled and other agent failures
	codeLLMAuth       = -32001 // the provider rejected the credentials
	codeModelNotFound = -32002 // the provider does not know the model or route
)

// Agent is one ACP connection's state: its sessions and the shared LLM
// client.
type Agent struct {
	opts    Options
	llm     *llm.Client
	conn    *jsonrpc.Conn
	log     *slog.Logger
	env     proc.Env
	version string

	mu       sync.Mutex
	sessions map[string]*Session
	created  int

	hookSeq atomic.Int64 // process-wide counter in injected hook ids
	// gooseNotes: the client opted in to _goose/unstable/… notifications
	// at initialize (acp.InitializeParams.GooseNotifications).
	gooseNotes atomic.Bool
	// protocol is the ACP version chosen at initialize (0 before it).
	protocol atomic.Int32
	// turns counts v2 turns running past their session/prompt answer;
	// serve waits for them before stopping the sessions' MCP servers.
	turns   sync.WaitGroup
	closing atomic.Bool
}

// newAgent builds an agent for opts.
func newAgent(opts Options, env proc.Env, log *slog.Logger, version string) *Agent {
	client := llm.New(llm.Config{
		Provider: opts.Provider, BaseURL: opts.BaseURL, APIKey: string(opts.APIKey), APIVersion: opts.APIVersion,
		API: opts.OpenAIAPI, MaxOutputTokens: opts.MaxOutputTokens, Effort: opts.Effort,
		PromptCaching: opts.PromptCaching, NoStream: !opts.Stream, IdleTimeout: opts.LLMTimeout,
		MaxCallTime: opts.LLMMaxCall, IdleSetting: envLLMTimeout, MaxCallSetting: envLLMMaxCall,
		RetryBase: opts.RetryBase, Logger: log,
	})
	return &Agent{opts: opts, llm: client, log: log, env: env, version: version, sessions: map[string]*Session{}}
}

// serve runs the ACP connection until EOF, a fatal frame or ctx's end, then
// stops every session's MCP servers.
func (a *Agent) serve(ctx context.Context, conn *jsonrpc.Conn) error {
	a.conn = conn
	err := conn.Serve(ctx, a.handle)
	a.closing.Store(true)
	a.turns.Wait() // each ends at the connection's end (promptV2)
	a.mu.Lock()
	sessions := make([]*Session, 0, len(a.sessions))
	for _, s := range a.sessions {
		sessions = append(sessions, s)
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Add(1)
		// Ends when the session's MCP children are reaped.
		go func() {
			defer wg.Done()
			s.reg.Close()
		}()
	}
	wg.Wait()
	a.llm.Close()
	return err
}

// handle dispatches one request or notification.
func (a *Agent) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	switch req.Method {
	case acp.MethodInitialize:
		return a.initialize(req)
	case acp.MethodSessionNew:
		return a.newSession(ctx, req)
	case acp.MethodSessionPrompt:
		if a.v2() {
			return a.promptV2(ctx, req)
		}
		return a.prompt(ctx, req)
	case methodSessionClose:
		return a.closeSession(req)
	case acp.MethodSessionLoad:
		return a.loadSession(ctx, req, acp.MethodSessionLoad)
	case acp.MethodSessionResume:
		return a.loadSession(ctx, req, acp.MethodSessionResume)
	case acp.MethodSessionList:
		return a.listSessions(req)
	case acp.MethodSessionCancel:
		var p acp.CancelParams
		if err := decode(req, &p); err != nil {
			if req.IsNotification() {
				return nil, nil
			}
			return nil, err
		}
		if s := a.session(p.SessionID); s != nil {
			s.cancelTurn()
		}
		return json.RawMessage("null"), nil
	case acp.MethodSetModel:
		return a.setModel(req)
	case acp.MethodSteer:
		return a.steer(req)
	}
	if req.IsNotification() {
		return nil, nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.MethodNotFound, "jsonrpc: method not found: %s", req.Method)
}

// decode reads params leniently (unknown fields ignored).
func decode(req *jsonrpc.Request, v any) error {
	params := req.Params
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return jsonrpc.Errorf(jsonrpc.InvalidParams, "%s: %v", req.Method, err)
	}
	return nil
}

func invalid(format string, args ...any) *jsonrpc.Error {
	return jsonrpc.Errorf(jsonrpc.InvalidParams, "invalid params: "+format, args...)
}

func (a *Agent) initialize(req *jsonrpc.Request) (any, error) {
	var p acp.InitializeParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	if p.ProtocolVersion == nil {
		return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "initialize: missing field `protocolVersion`")
	}
	a.gooseNotes.Store(p.GooseNotifications())
	v := min(*p.ProtocolVersion, protocolVersion)
	a.protocol.Store(int32(v))
	if v >= 2 {
		return a.initializeV2(), nil
	}
	return acp.InitializeResult{
		ProtocolVersion:   v,
		AgentCapabilities: a.capabilities(),
		AuthMethods:       []json.RawMessage{},
		AgentInfo:         &acp.Implementation{Name: "buzz-agent", Version: a.version},
	}, nil
}

func (a *Agent) session(id string) *Session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

func randomID(prefix string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

func (a *Agent) newSession(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p acp.NewSessionParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	base := a.opts.SystemPrompt
	if strings.TrimSpace(p.SystemPrompt) != "" {
		base = p.SystemPrompt
	}
	s, err := a.openSession(ctx, acp.MethodSessionNew, p.Cwd, p.MCPServers, base)
	if err != nil {
		return nil, err
	}
	id, err := randomID("ses_")
	if err != nil {
		s.reg.Close()
		return nil, jsonrpc.Errorf(codeAgent, "%v", err)
	}
	s.id, s.created = id, time.Now().UTC()
	s.save() // listed and loadable from the start
	if a.opts.StateDir != "" {
		if n, err := pruneStates(a.opts.StateDir, maxKeptSessions, id); err != nil {
			a.log.Warn("old session states not pruned", "dir", a.opts.StateDir, "err", err)
		} else if n > 0 {
			a.log.Info("old session states removed", "removed", n, "kept", maxKeptSessions)
		}
	}
	if err := a.register(acp.MethodSessionNew, s); err != nil {
		return nil, err
	}
	a.log.Info("session created", "session", id, "cwd", p.Cwd, "mcp_servers", len(p.MCPServers), "skills", len(s.skills))
	return acp.NewSessionResult{SessionID: id, Models: a.models()}, nil
}

// models is the model list session/new and session/load answer with.
func (a *Agent) models() *acp.ModelInfo {
	return &acp.ModelInfo{
		CurrentModelID:  a.opts.Model,
		AvailableModels: []acp.Model{{ModelID: a.opts.Model, Name: a.opts.Model}},
	}
}

// openSession checks a session's working directory and MCP servers,
// builds its system prompt from base, hints and skills, and starts its
// MCP servers. The session it returns has no id and is not registered.
func (a *Agent) openSession(ctx context.Context, method, cwd string, servers []acp.MCPServer, base string) (*Session, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return nil, invalid("%s: cwd must be an absolute path", method)
	}
	if a.full() {
		return nil, invalid("%s: max sessions reached", method)
	}
	var specs []mcpclient.Spec
	for _, m := range servers {
		switch m.Type {
		case "", "stdio":
			if m.Command == "" {
				return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "%s: mcpServers entry %q: missing field `command`", method, m.Name)
			}
		case "http":
			if m.URL == "" {
				return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "%s: mcpServers entry %q: missing field `url`", method, m.Name)
			}
		default:
			return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "%s: mcpServers entry %q: transport %q not supported", method, m.Name, m.Type)
		}
		sp := mcpclient.Spec{Name: m.Name, Type: m.Type, Command: m.Command, Args: m.Args, URL: m.URL}
		for _, e := range m.Env {
			sp.Env = append(sp.Env, [2]string{e.Name, e.Value})
		}
		for _, h := range m.Headers {
			sp.Headers = append(sp.Headers, [2]string{h.Name, h.Value})
		}
		specs = append(specs, sp)
	}

	var hints string
	var skills []skill
	if !a.opts.NoHints {
		home := a.env.Getenv("HOME")
		hints = loadHints(cwd, home)
		skills = discoverSkills(cwd, home)
	}
	system := base
	if sec := instructionsSection(hints, skills); sec != "" {
		system += "\n\n" + sec
	}
	if len(system) > maxSystemPromptBytes {
		return nil, invalid("%s: combined system prompt exceeds 512KB limit (%d bytes)", method, len(system))
	}

	reg, err := mcpclient.New(ctx, specs, mcpclient.Options{
		Cwd: cwd, Environ: a.env.Environ, Stderr: a.env.Err(),
		InitTimeout: a.opts.MCPInitTimeout, RestartMax: a.opts.RestartMax,
		RestartBase: a.opts.RestartBase, RestartCap: a.opts.RestartCap,
		HookServers: a.opts.HookServers, Logger: a.log,
	})
	if err != nil {
		return nil, jsonrpc.Errorf(codeAgent, "mcp: %v", err)
	}
	return &Session{agent: a, reg: reg, skills: skills, system: system, cwd: cwd, base: base}, nil
}

// register adds s to the agent's sessions, or closes it when the agent
// is full or closing.
func (a *Agent) register(method string, s *Session) error {
	a.mu.Lock()
	if a.opts.MaxSessions > 0 && a.created >= a.opts.MaxSessions || a.closing.Load() {
		a.mu.Unlock()
		s.reg.Close()
		return invalid("%s: max sessions reached", method)
	}
	a.created++
	a.sessions[s.id] = s
	a.mu.Unlock()
	return nil
}

func (a *Agent) full() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.opts.MaxSessions > 0 && a.created >= a.opts.MaxSessions
}

func (a *Agent) setModel(req *jsonrpc.Request) (any, error) {
	var p acp.SetModelParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.ModelID) == "" {
		return nil, invalid("session/set_model: modelId must not be empty")
	}
	s := a.session(p.SessionID)
	if s == nil {
		return nil, invalid("session/set_model: unknown session")
	}
	s.mu.Lock()
	s.model = p.ModelID
	s.mu.Unlock()
	return p, nil
}

func (a *Agent) steer(req *jsonrpc.Request) (any, error) {
	var p acp.SteerParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	if len(p.Prompt) == 0 {
		return nil, invalid("steer: prompt must not be empty")
	}
	if p.ExpectedRunID == "" {
		return nil, invalid("steer: expectedRunId must not be empty")
	}
	s := a.session(p.SessionID)
	if s == nil {
		return nil, invalid("steer: unknown session")
	}
	msgID, err := randomID("steer_")
	if err != nil {
		return nil, jsonrpc.Errorf(codeAgent, "%v", err)
	}
	s.mu.Lock()
	run := s.runID
	if run == "" {
		s.mu.Unlock()
		return nil, invalid("steer: no active run to steer")
	}
	if run != p.ExpectedRunID {
		s.mu.Unlock()
		return nil, invalid("steer: expected active run id `%s` but found `%s`", p.ExpectedRunID, run)
	}
	s.steers = append(s.steers, p.Prompt)
	s.mu.Unlock()
	s.update(map[string]any{"sessionUpdate": acp.UpdateSessionInfo,
		"_meta": map[string]any{"goose": map[string]any{"queuedSteer": map[string]string{"messageId": msgID, "runId": run}}}})
	return map[string]string{"runId": run, "messageId": msgID}, nil
}

// turnError maps an error that ended a turn to its ACP error.
func (a *Agent) turnError(model string, err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return rpc
	}
	var le *llm.Error
	if errors.As(err, &le) {
		code := codeAgent
		msg := "llm: (" + model + ") " + le.Msg
		switch le.Kind {
		case llm.KindAuth:
			code, msg = codeLLMAuth, "llm auth: ("+model+") "+le.Msg
		case llm.KindNotFound:
			code, msg = codeModelNotFound, "llm model not found: ("+model+") "+le.Msg
		}
		if key := string(a.opts.APIKey); len(key) >= minRedactLen {
			// A provider's error body may echo the key it refused.
			msg = strings.ReplaceAll(msg, key, "[redacted]")
		}
		return &jsonrpc.Error{Code: code, Message: msg, Data: a.failure(model, le)}
	}
	return &jsonrpc.Error{Code: codeAgent, Message: err.Error()}
}
