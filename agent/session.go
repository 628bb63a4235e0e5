package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"buzzbox/agent/llm"
	"buzzbox/agent/mcpclient"
	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
)

// Session is one ACP session: its MCP servers, skills, history and the
// state of its running prompt. Sessions live until the process ends.
type Session struct {
	id    string
	agent *Agent
	reg   *mcpclient.Registry
	// replaySeq numbers replayed chunks that had no messageId (v2 needs one).
	replaySeq atomic.Int64
	skills    []skill
	system    string
	// cwd is the session's working directory, base the system prompt
	// before the instructions section (kept in the state file; hints and
	// skills are read anew on load), created when session/new made it.
	cwd     string
	base    string
	created time.Time

	mu       sync.Mutex
	busy     bool
	cancel   context.CancelFunc // cancels the running turn; nil when idle
	runID    string
	steers   [][]acp.ContentBlock
	model    string // set_model override; empty = configured model
	history  []llm.Message
	original string // first prompt text of the session, never replaced
	handoffs int
	// measured is the provider's input-token count of the last request, and
	// measuredAt the context-pressure bytes of the history it saw.
	measured   *uint64
	measuredAt int
	usage      usageTotals
	// queued counts prompt requests read but not yet started, and
	// cancelQueued records a cancel that arrived for them: a cancel sent
	// right behind a prompt must not be lost in the gap.
	queued       int
	cancelQueued bool
	// allowed holds the approval rules a person allowed for the rest of
	// the session.
	allowed map[string]bool
}

// usageTotals accumulates provider usage across the session.
type usageTotals struct {
	input, output, cached uint64
	total                 uint64
	totalState            int // 0 unseen, 1 exact, 2 unknown for good
	seen                  bool
}

func (u *usageTotals) add(x llm.Usage) {
	if !x.Any() {
		return
	}
	u.seen = true
	if x.Input != nil {
		u.input += *x.Input
	}
	if x.Output != nil {
		u.output += *x.Output
	}
	if x.Cached != nil {
		u.cached += *x.Cached
	}
	switch {
	case u.totalState == 2:
	case x.Total == nil || u.total+*x.Total < u.total:
		u.totalState = 2
	default:
		u.total += *x.Total
		u.totalState = 1
	}
}

// update sends a session/update notification.
func (s *Session) update(u any) {
	if s.agent.v2() {
		var ok bool
		if u, ok = s.v2Update(u); !ok {
			return
		}
	}
	_ = s.agent.conn.Notify(acp.MethodSessionUpdate, map[string]any{"sessionId": s.id, "update": u})
}

func (s *Session) cancelTurn() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	} else if s.queued > 0 {
		s.cancelQueued = true
	}
	s.mu.Unlock()
}

// notePrompt runs on the reader goroutine when a session/prompt request
// arrives, before its handler starts (see jsonrpc.Options.BeforeRequest).
func (a *Agent) notePrompt(params []byte) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	if s := a.session(p.SessionID); s != nil {
		s.mu.Lock()
		s.queued++
		s.mu.Unlock()
	}
}

// emitUsage reports token usage in goose's notification; only to a
// client that opted in to those at initialize.
func (s *Session) emitUsage(last llm.Usage, model string) {
	if !s.agent.gooseNotes.Load() {
		return
	}
	s.mu.Lock()
	u := s.usage
	s.mu.Unlock()
	used := uint64(0)
	if last.Input != nil {
		used += *last.Input
	}
	if last.Output != nil {
		used += *last.Output
	}
	up := map[string]any{
		"sessionUpdate": acp.UpdateUsage, "used": used, "contextLimit": 0,
		"accumulatedInputTokens": u.input, "accumulatedOutputTokens": u.output,
		"accumulatedCachedInputTokens": u.cached, "model": model,
	}
	if u.totalState == 1 {
		up["accumulatedTotalTokens"] = u.total
	}
	_ = s.agent.conn.Notify(acp.MethodUsageUpdate, map[string]any{"sessionId": s.id, "update": up})
}

// joinPrompt renders prompt blocks as one user text and the images that
// follow it (promptCapabilities.image): at most maxPromptImages, each
// valid base64 of a type the model APIs take.
func joinPrompt(blocks []acp.ContentBlock) (string, []llm.Image, error) {
	parts := make([]string, 0, len(blocks))
	var images []llm.Image
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "resource_link":
			parts = append(parts, "[resource: "+b.URI+"]")
		case "image":
			if !promptImageType(b.MimeType) {
				return "", nil, invalid("image block: type %q, want image/png, image/jpeg, image/gif or image/webp", b.MimeType)
			}
			if _, err := base64.StdEncoding.DecodeString(b.Data); err != nil || b.Data == "" {
				return "", nil, invalid("image block: data is not base64")
			}
			if len(images) == maxPromptImages {
				return "", nil, invalid("prompt: more than %d images", maxPromptImages)
			}
			images = append(images, llm.Image{Data: b.Data, MIME: b.MimeType})
		default:
			return "", nil, invalid("unsupported content block: %s", b.Type)
		}
	}
	return strings.Join(parts, "\n"), images, nil
}

// promptImageType reports whether prompts may carry images of type m:
// those every provider's API takes.
func promptImageType(m string) bool {
	switch m {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// promptSession decodes a session/prompt request and finds its session,
// for either protocol version's handler.
func (a *Agent) promptSession(req *jsonrpc.Request) (*Session, acp.PromptParams, error) {
	var p acp.PromptParams
	if err := decode(req, &p); err != nil {
		return nil, p, err
	}
	s := a.session(p.SessionID)
	if s == nil {
		return nil, p, invalid("session/prompt: unknown session")
	}
	return s, p, nil
}

func (a *Agent) prompt(ctx context.Context, req *jsonrpc.Request) (any, error) {
	s, p, err := a.promptSession(req)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cancelled := s.cancelQueued
	if s.queued > 0 {
		s.queued--
	}
	if s.queued == 0 {
		s.cancelQueued = false
	}
	s.mu.Unlock()
	text, images, err := joinPrompt(p.Prompt)
	if err != nil {
		return nil, err
	}
	if len(text) > maxPromptBytes {
		return nil, invalid("prompt: exceeds %d bytes", maxPromptBytes)
	}
	runID, err := randomID("run_")
	if err != nil {
		return nil, jsonrpc.Errorf(codeAgent, "%v", err)
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cancelled {
		cancel() // a cancel arrived between this request and its start
	}
	s.mu.Lock()
	if s.busy {
		s.mu.Unlock()
		return nil, invalid("session/prompt: prompt already in flight")
	}
	s.busy = true
	s.cancel = cancel
	s.runID = runID
	s.steers = nil
	model := a.opts.Model
	if s.model != "" {
		model = s.model
	}
	t := &turn{s: s, a: a, model: model, runID: runID, history: s.history, original: s.original,
		handoffs: s.handoffs, measured: s.measured, measuredAt: s.measuredAt}
	s.history = nil
	s.mu.Unlock()

	s.update(map[string]any{"sessionUpdate": acp.UpdateSessionInfo, "_meta": map[string]any{"goose": map[string]any{"activeRunId": runID}}})
	stop, err := t.run(tctx, text, images)

	s.mu.Lock()
	s.history = t.history
	s.original = t.original
	s.handoffs = t.handoffs
	s.measured, s.measuredAt = t.measured, t.measuredAt
	s.mu.Unlock()
	// Saved while the session is still busy, before the answer: once the
	// client sees the turn end, a restart keeps it.
	s.save()
	s.mu.Lock()
	s.busy = false
	s.cancel = nil
	s.runID = ""
	s.steers = nil
	s.mu.Unlock()
	if t.sawUsage {
		s.emitUsage(t.lastUsage, model)
	}
	if err != nil {
		a.log.Warn("turn failed", "session", s.id, "err", err)
		return nil, a.turnError(model, err)
	}
	a.log.Info("turn ended", "session", s.id, "stop", stop, "rounds", t.round)
	return acp.PromptResult{StopReason: stop}, nil
}

// steerPending reports whether a steer waits for the next round.
func (s *Session) steerPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steers) > 0
}

// drainSteers takes queued steers as user texts.
func (s *Session) drainSteers() []string {
	s.mu.Lock()
	q := s.steers
	s.steers = nil
	s.mu.Unlock()
	var out []string
	for _, blocks := range q {
		text, _, err := joinPrompt(blocks) // a steer's images are not kept: the harness steers with text
		if err != nil || strings.TrimSpace(text) == "" || len(text) > maxPromptBytes {
			s.agent.log.Warn("dropped steer", "session", s.id)
			continue
		}
		out = append(out, text)
	}
	return out
}

// save writes the session's state file; a failure is logged, since the
// conversation goes on in memory. No-op when sessions are not kept.
func (s *Session) save() {
	opts := &s.agent.opts
	if opts.StateDir == "" {
		return
	}
	s.mu.Lock()
	sf := &stateFile{Version: stateVersion, SessionID: s.id, Cwd: s.cwd, Title: title(s.original), Created: s.created,
		Updated: time.Now().UTC(), Model: s.model, System: s.base, Original: s.original, Handoffs: s.handoffs}
	h := s.history
	s.mu.Unlock()
	b, err := encodeState(sf, h, opts.MaxHistoryBytes, maxStateFileBytes(opts.MaxHistoryBytes))
	if err == nil {
		err = writeState(opts.StateDir, b, s.id)
	}
	if err != nil {
		s.agent.log.Warn("session state not saved; a restart loses this conversation", "session", s.id, "err", err)
	}
}
