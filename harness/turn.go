package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"buzzbox/harness/acpclient"
	"buzzbox/harness/observer"

	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/workspace"
)

// runTurn runs one channel turn on t's slot (§10). It touches only the
// slot's sessions (the slot is claimed) and reports through its result.
func (h *harness) runTurn(ctx context.Context, t *turnHandle, channel string, gen int, reason string) (out turnOutcome) {
	start := time.Now()
	a := t.agent
	s := t.slot
	deadline := t.deadline // the loop may renew t.deadline later; the prompt keeps this one
	log := h.log.With("channel", channel, "slot", s.idx)
	defer func() {
		if r := recover(); r != nil {
			log.Error("turn panicked", "panic", r)
			out = turnOutcome{Outcome: acpclient.Outcome{Result: acpclient.TurnProtocolError, Err: fmt.Errorf("turn panicked: %v", r)}}
		}
	}()
	sc := observer.Scope{Slot: s.idx, Channel: channel, Turn: t.turnID, StartedAt: t.startedAt.UTC().Format(time.RFC3339Nano)}
	h.obs.Emit(observer.FrameTurnStarted, sc, map[string]any{"triggeringEventIds": eventIDs(t.batch),
		"parkedEventIds": eventIDs(t.parked), "reason": nullable(reason)})
	var session atomic.Pointer[string]
	if h.cfg.TurnLiveness > 0 {
		lctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		lsc := sc   // the turn goes on to set sc.Session; the loop reads it from session
		go func() { // liveness pings; stopped (and waited for) when the turn returns
			defer close(done)
			h.livenessLoop(lctx, lsc, a, &session)
		}()
		defer func() { stop(); <-done }()
	}
	info, _ := h.chans.get(ctx, channel)
	ss := s.sessions[channel]
	if ss != nil && ss.gen != gen {
		a.CloseSession(ss.id) // rotated or switched while this slot was busy
		ss = nil
	}
	newSession := false
	if ss == nil {
		model := h.cfg.Model
		if t.model != "" {
			model = t.model
		}
		var err error
		ss, err = h.newSession(ctx, a, &info, false, model, sc, t.resume)
		if err != nil {
			if t.switchAck != nil {
				h.answerControl(*t.switchAck, observer.StatusFailure, err.Error())
			}
			return sessionFailure(a, err)
		}
		if t.switchAck != nil {
			h.answerControl(*t.switchAck, ss.modelStatus, "")
		}
		ss.gen = gen
		s.sessions[channel] = ss
		newSession = !ss.resumed
	} else if t.switchAck != nil {
		h.answerControl(*t.switchAck, observer.StatusSwitched, "") // the session already has it
	}
	sid := ss.id
	session.Store(&sid)
	h.approvals.bind(sid, channel, t.batch[len(t.batch)-1]) // its permission requests go in this thread
	defer h.approvals.unbind(sid)
	sc.Session = sid
	h.obs.Emit(observer.FrameSessionResolved, sc, map[string]any{"isNewSession": newSession})
	h.do(func() { t.session = sid })
	t.track.bind(sid)
	log = log.With("session", sid)
	// Every way out of the turn from here reports the usage it caused (§10 step 7).
	mark := a.UsageMark()
	defer func() { out.spent = h.reportUsage(ctx, a, ss, channel, start, mark, out.Outcome) }()

	if newSession && h.cfg.InitialMessage != "" {
		text := h.cfg.InitialMessage
		if len(ss.legacy) > 0 && h.cfg.BasePrompt != "" {
			text = "[Base]\n" + strings.TrimSpace(h.cfg.BasePrompt) + "\n\n" + text
		}
		o := a.Prompt(ctx, sid, []acp.ContentBlock{acp.TextBlock(text)}, h.cfg.IdleTimeout, time.Now().Add(h.cfg.MaxTurn), nil)
		if o.Result != acpclient.TurnOK {
			delete(s.sessions, channel)
			return turnOutcome{Outcome: o, stage: "initial"}
		}
	}

	// Prompt sections.
	last := t.batch[len(t.batch)-1]
	var keys []string
	for _, e := range append(append([]*Event{}, t.parked...), t.batch...) {
		keys = append(keys, e.PubKey)
		keys = append(keys, e.pTags()...)
	}
	profiles := h.profiles.get(ctx, keys)
	var cs *contextSection
	if root, _ := last.thread(); h.cfg.ContextLimit > 0 && (root != "" || info.Type == "dm") {
		hdr, evs := fetchContext(ctx, h.io, last, info, h.cfg.AgentHex, h.cfg.ContextLimit)
		if hdr != "" {
			var missing []string
			for _, ev := range evs {
				if profiles[ev.PubKey] == nil {
					missing = append(missing, ev.PubKey)
				}
			}
			for k, v := range h.profiles.get(ctx, missing) {
				profiles[k] = v
			}
			cs = renderContext(hdr, evs, profiles, h.cfg.Owner, h.cfg.AgentHex)
		}
	}
	var prs map[string]*prContext
	for _, e := range t.batch {
		if isPRWake(e.Woken) {
			if prs == nil {
				prs = map[string]*prContext{}
			}
			prs[e.ID] = fetchPRContext(ctx, h.io, e, func(keys []string) map[string]*profile { return h.profiles.get(ctx, keys) })
		}
	}
	in := &promptInput{Batch: t.batch, Parked: t.parked, Reason: reason, Channel: info, Profiles: profiles,
		Context: cs, Agent: h.cfg.AgentHex, Owner: h.cfg.Owner, Legacy: ss.legacy, PRs: prs}
	blocks := formatPrompt(in)
	blocks = append(blocks, h.imageBlocks(ctx, a, t.batch)...)

	for _, e := range t.batch {
		h.reacts.add(ctx, e, emojiWorking)
	}
	tctx, stopTyping := context.WithCancel(ctx)
	defer stopTyping()
	h.do(func() { t.stopTyping = stopTyping }) // the agent's reply in the thread ends it early (answeredInThread)
	go h.typingLoop(tctx, channel, last)       // ends with stopTyping
	log.Info("prompting agent", "events", len(t.batch), "parked", len(t.parked))
	if h.t.prompting != nil {
		h.t.prompting(t.batch, time.Now())
	}
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { // the first-word watch; ends with the prompt (stopWatch)
		defer close(watched)
		h.watchFirstWord(wctx, channel, t, a, sid)
	}()
	var budgetBase *acpclient.UsageCounters
	if ss.usage != nil {
		c := *ss.usage
		budgetBase = &c
	}
	budgeted := make(chan struct{})
	go func() { // the budget watch; ends with the prompt (stopWatch)
		defer close(budgeted)
		if h.cfg.Budget.On() {
			h.watchBudget(wctx, channel, t, a, sid, mark, budgetBase, t.daySpent)
		}
	}()
	o := a.Prompt(ctx, sid, blocks, h.cfg.IdleTimeout, deadline, t.signal)
	stopWatch()
	<-watched
	<-budgeted
	out = turnOutcome{Outcome: o, newSession: newSession, stage: "prompt"}
	if h.cfg.PostFinalText && o.Result == acpclient.TurnOK && (info.isDM() || anyMentions(t.batch, h.cfg.AgentHex)) {
		out.guard = true
		out.finalText, out.textCut = a.FinalText(sid)
	}
	return out
}

// watchFirstWord tells the thread, on a batch's first try, when the agent
// has sent nothing of substance (text, thought, tool call) h.t.firstWord
// into the prompt: a model that never answers otherwise keeps the person
// waiting through the agent's own timeouts and retries in silence.
func (h *harness) watchFirstWord(ctx context.Context, channel string, t *turnHandle, a *acpclient.Agent, sid string) {
	timer := time.NewTimer(h.t.firstWord)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return
	case <-timer.C:
	}
	if a.Spoke(sid) {
		return
	}
	text := "⏳ Still working on this: the agent has had no answer from its model for " + h.t.firstWord.String() +
		". The model provider may be slow or not answering; I will tell you if it fails."
	h.do(func() {
		if cs := h.queues[channel]; cs != nil && cs.turn == t && cs.attempts == 0 { // retries stay quiet (the failure notice spoke)
			h.notice(ctx, cs, append(append([]*Event{}, t.parked...), t.batch...), text)
		}
	})
}

// anyMentions reports whether an event of batch p-tags hex.
func anyMentions(batch []*Event, hex string) bool {
	for _, e := range batch {
		if e.mentions(hex) {
			return true
		}
	}
	return false
}

func sessionFailure(a *acpclient.Agent, err error) turnOutcome {
	o := acpclient.Outcome{Err: err}
	var rpcErr *jsonrpc.Error
	switch {
	case a.StdinTimedOut():
		o.Result = acpclient.TurnWriteTimeout
	case !a.Alive() || errors.Is(err, acpclient.ErrExited):
		o.Result = acpclient.TurnExited
	case errors.As(err, &rpcErr):
		o.Result = acpclient.TurnAgentError
	default:
		o.Result = acpclient.TurnProtocolError
	}
	return turnOutcome{Outcome: o, stage: "session"}
}

// claudeAdapter reports whether name is one of the Claude Code ACP
// adapters, which take _meta.systemPrompt.append and keep their own preset:
// the current package and the one it was published as before.
func claudeAdapter(name string) bool {
	switch name {
	case "@agentclientprotocol/claude-agent-acp", "@zed-industries/claude-agent-acp", "@zed-industries/claude-code-acp":
		return true
	}
	return false
}

// newSession opens an ACP session with the system prompt delivered the
// way the agent takes it (§9.3–9.5). ch is nil for heartbeat sessions.
//
// model is the model to set ("" none); sc says what the
// session_config_captured frame is about. resume, when set, is a session
// the agent made before (this run or one before a restart) to take up
// with session/load; when the agent refuses it a new session is opened.
func (h *harness) newSession(ctx context.Context, a *acpclient.Agent, ch *channelInfo, heartbeat bool, model string, sc observer.Scope, resume string) (*sessionState, error) {
	parts := systemParts{Cwd: h.cwd, Base: h.cfg.BasePrompt, Persona: h.cfg.SystemPrompt, Team: h.cfg.TeamInstructions}
	if !heartbeat && ch != nil {
		if h.cfg.Memory && h.cfg.Owner != "" {
			parts.Memory = fetchCoreMemory(ctx, h.io, h.ownerKey, h.cfg.AgentHex, h.cfg.Owner)
		}
		if !ch.isDM() {
			parts.Canvas = fetchCanvas(ctx, h.io, ch.ID)
		}
	}
	system := parts.text()
	servers := h.mcpServers(ch)
	if a.Protocol() >= 2 {
		for i := range servers {
			servers[i].Type = "stdio"
		}
	}
	params := acp.NewSessionRequest{Cwd: h.cwd, MCPServers: servers}
	meta := acp.SessionMeta{}
	title := h.cfg.SessionTitle
	if ch != nil {
		title = sessionTitle(h.cfg.SessionTitle, *ch)
	}
	meta.SessionTitle = title
	ss := &sessionState{}
	goose := false
	switch {
	case system == "":
	case claudeAdapter(a.Name()):
		meta.SystemPrompt = &acp.AppendPrompt{Append: system}
	case a.Name() == "goose" && a.GooseSystemPrompt() >= 0:
		goose = true
	case a.SystemPromptCap():
		params.SystemPrompt = &acp.SystemPrompt{Mode: "append", Text: system}
	case a.Protocol() >= 2:
		params.SystemPrompt = &acp.SystemPrompt{Text: system}
	default:
		ss.legacy = parts.sections(false)
	}
	if a.Name() == "goose" && a.GooseSystemPrompt() < 0 && system != "" {
		ss.legacy = parts.sections(false)
	}
	if meta != (acp.SessionMeta{}) {
		params.Meta = &meta
	}
	var res acp.NewSessionReply
	rctx, cancel := context.WithTimeout(ctx, acpclient.RequestTimeout)
	defer cancel()
	var raw json.RawMessage
	resumed := false
	if resume != "" {
		lp := params
		lp.SessionID = resume
		err := a.Call(rctx, acp.MethodSessionLoad, lp, &raw)
		switch {
		case err == nil:
			resumed = true
			h.log.Info("session loaded", "channel", sc.Channel, "session", resume)
		case acpclient.TransportClass(err) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
			return nil, fmt.Errorf("session/load: %w", err)
		default:
			h.log.Warn("agent could not load the channel's session; starting a new one", "channel", sc.Channel, "session", resume, "err", err)
		}
	}
	if !resumed {
		if err := a.Call(rctx, acp.MethodSessionNew, params, &raw); err != nil {
			return nil, fmt.Errorf("session/new: %w", err)
		}
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("session/new: decode reply: %w", err)
	}
	h.log.Debug("session reply", "reply", truncRunes(string(raw), 2000))
	if resumed {
		res.SessionID = resume
	}
	if res.SessionID == "" {
		return nil, errors.New("session/new: reply has no sessionId")
	}
	ss.id, ss.resumed = res.SessionID, resumed
	catalog := acpclient.Catalog{}
	for _, o := range res.ConfigOptions {
		if o.Category == "model" {
			for _, v := range o.Options {
				catalog[v.Value] = true
			}
		}
	}
	if res.Models != nil {
		for _, am := range res.Models.AvailableModels {
			catalog[am.ModelID] = true
		}
	}
	a.NoteCatalog(catalog)
	if goose && !resumed {
		err := a.Call(rctx, acp.MethodGooseSystemPrompt, acp.GooseSystemPromptParams{SessionID: ss.id, Mode: "append", Key: "buzz", Text: system}, nil)
		var rpcErr *jsonrpc.Error
		switch {
		case err == nil:
			a.SetGooseSystemPrompt(1)
		case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.MethodNotFound:
			h.log.Warn("goose does not take the system-prompt extension; prompts carry the sections instead")
			a.SetGooseSystemPrompt(-1)
			ss.legacy = parts.sections(false)
		default:
			return nil, fmt.Errorf("%s: %w", acp.MethodGooseSystemPrompt, err)
		}
	}
	refused := false
	set := func(method string, p any) error {
		if c, ok := p.(acp.SetConfigOptionParams); ok && a.Protocol() >= 2 {
			c.Type = "id" // v2 tags a select's value; v1 takes it bare
			p = c
		}
		cctx, cancel := context.WithTimeout(ctx, configTimeout)
		defer cancel()
		err := a.Call(cctx, method, p, nil)
		if err != nil && (acpclient.TransportClass(err) || errors.Is(err, context.DeadlineExceeded)) {
			return fmt.Errorf("%s: %w", method, err)
		}
		if err != nil {
			refused = true
			h.log.Warn("agent refused a session setting", "method", method, "err", err)
		}
		return nil
	}
	if m := model; m != "" {
		done := false
		for _, o := range res.ConfigOptions {
			if o.Category != "model" {
				continue
			}
			for _, v := range o.Options {
				if v.Value == m && !done {
					if err := set(acp.MethodSetConfig, acp.SetConfigOptionParams{SessionID: ss.id, ConfigID: o.Key(), Value: m}); err != nil {
						return nil, err
					}
					done = true
				}
			}
		}
		if !done && res.Models != nil {
			for _, am := range res.Models.AvailableModels {
				if am.ModelID == m && !done {
					if err := set(acp.MethodSetModel, acp.SetModelParams{SessionID: ss.id, ModelID: m}); err != nil {
						return nil, err
					}
					done = true
				}
			}
		}
		switch {
		case !done:
			ss.modelStatus = observer.StatusUnsupportedModel
			h.log.Warn("agent does not offer the configured model; keeping its default", "model", m)
		case refused:
			ss.modelStatus = observer.StatusFailure
		default:
			ss.modelStatus = observer.StatusSwitched
		}
	}
	if wire := permissionWire(h.cfg.PermissionMode); wire != "" {
		var modes []string
		if res.Modes != nil {
			for _, md := range res.Modes.AvailableModes {
				modes = append(modes, md.ID)
			}
		}
		var opts []configOption
		for _, o := range res.ConfigOptions {
			co := configOption{id: o.Key(), category: o.Category}
			for _, v := range o.Options {
				co.values = append(co.values, v.Value)
			}
			opts = append(opts, co)
		}
		if err := setMode(modes, opts, wire, ss.id, set); err != nil {
			return nil, err
		}
	}
	var captured struct {
		ConfigOptions json.RawMessage `json:"configOptions"`
		Modes         json.RawMessage `json:"modes"`
		Models        json.RawMessage `json:"models"`
	}
	json.Unmarshal(raw, &captured) // it decoded above
	sc.Session = ss.id
	h.obs.Emit(observer.FrameSessionConfig, sc, map[string]any{"configOptions": rawOrNull(captured.ConfigOptions),
		"modes": rawOrNull(captured.Modes), "models": rawOrNull(captured.Models), "model": nullable(model),
		"modelStatus": nullable(ss.modelStatus), "modelOverridden": model != "" && model != h.cfg.Model && ss.modelStatus == observer.StatusSwitched})
	return ss, nil
}

// configOption is one select of a session/new reply's configOptions.
type configOption struct {
	id, category string
	values       []string
}

// setMode asks for the permission mode wire: through the legacy modes
// list when the agent offers it there, else through the configOptions
// select of category "mode" (claude-agent-acp offers only that one, and
// left alone it runs in its own default mode, which may block the shell).
func setMode(modes []string, opts []configOption, wire, session string, set func(string, any) error) error {
	for _, id := range modes {
		if id == wire {
			return set(acp.MethodSetConfig, acp.SetConfigOptionParams{SessionID: session, ConfigID: "mode", Value: wire})
		}
	}
	for _, o := range opts {
		if o.category != "mode" {
			continue
		}
		for _, v := range o.values {
			if v == wire {
				return set(acp.MethodSetConfig, acp.SetConfigOptionParams{SessionID: session, ConfigID: o.id, Value: wire})
			}
		}
	}
	return nil
}

func rawOrNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}

func eventIDs(evs []*Event) []string {
	ids := make([]string, 0, len(evs))
	for _, e := range evs {
		ids = append(ids, e.ID)
	}
	return ids
}

// newTurnID is a random UUID (version 4) naming one turn in observer frames.
func newTurnID() string { return workspace.NewUUID() }

// livenessLoop records turn_liveness every --turn-liveness-secs until ctx
// ends: how long the turn has run and how long the agent has been quiet.
func (h *harness) livenessLoop(ctx context.Context, sc observer.Scope, a *acpclient.Agent, session *atomic.Pointer[string]) {
	start := time.Now()
	t := time.NewTicker(h.cfg.TurnLiveness)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if sid := session.Load(); sid != nil {
				sc.Session = *sid
			}
			idle := now.Sub(start)
			if last := a.LastOutput(); last.After(start) {
				idle = now.Sub(last)
			}
			h.obs.Emit(observer.FrameTurnLiveness, sc, map[string]any{"elapsedMs": now.Sub(start).Milliseconds(), "idleMs": idle.Milliseconds()})
		}
	}
}

// turnEnded records the end of channel turn t (on the loop goroutine,
// after every frame the turn itself recorded): turn_completed when its
// prompt ended or a control signal cancelled it, else turn_error.
func (h *harness) turnEnded(channel string, t *turnHandle, out turnOutcome) {
	sc := observer.Scope{Slot: t.slot.idx, Channel: channel, Session: t.session, Turn: t.turnID,
		StartedAt: t.startedAt.UTC().Format(time.RFC3339Nano)}
	ms := time.Since(t.startedAt).Milliseconds()
	switch out.Result {
	case acpclient.TurnOK, acpclient.TurnSignalled:
		stop := string(out.Stop)
		if out.Result == acpclient.TurnSignalled {
			stop = string(acp.StopCancelled)
		}
		reason := ""
		if out.Result == acpclient.TurnSignalled {
			reason = t.reason
		}
		h.obs.Emit(observer.FrameTurnCompleted, sc, map[string]any{"outcome": out.Result.String(), "stopReason": stop,
			"reason": nullable(reason), "durationMs": ms})
	default:
		h.obs.Emit(observer.FrameTurnError, sc, map[string]any{"outcome": out.Result.String(), "error": errText(out.Err),
			"stage": nullable(out.stage), "durationMs": ms})
	}
}

// heartbeatTick runs a heartbeat turn when nothing is queued (§8.5).
func (h *harness) heartbeatTick(ctx context.Context) {
	if h.heartbeat {
		return
	}
	for _, cs := range h.queues {
		if len(cs.queue) > 0 {
			return // dispatch takes the work instead
		}
	}
	var s *slot
	for _, c := range h.slots {
		if c.agent != nil && !c.busy && c.agent.Alive() {
			s = c
			break
		}
	}
	if s == nil {
		return
	}
	s.busy = true
	h.heartbeat = true
	a := s.agent
	go func() { // one heartbeat turn; reports back
		start := time.Now()
		ss := s.sessions[heartbeatKey]
		var err error
		if ss == nil {
			ss, err = h.newSession(ctx, a, nil, true, h.cfg.Model, observer.Scope{Slot: s.idx}, "")
		}
		var o acpclient.Outcome
		var spent spend
		if err != nil {
			o = sessionFailure(a, err).Outcome
		} else {
			mark := a.UsageMark()
			s.sessions[heartbeatKey] = ss
			text := h.cfg.HeartbeatPrompt
			if text == "" {
				text = heartbeatText(time.Now())
			}
			if len(ss.legacy) > 0 && h.cfg.BasePrompt != "" {
				text = "[Base]\n" + strings.TrimSpace(h.cfg.BasePrompt) + "\n\n" + text
			}
			o = a.Prompt(ctx, ss.id, []acp.ContentBlock{acp.TextBlock(text)}, h.cfg.IdleTimeout, time.Now().Add(h.cfg.MaxTurn), nil)
			spent = h.reportUsage(ctx, a, ss, heartbeatKey, start, mark, o) // before the slot is released
		}
		h.do(func() {
			h.addSpend(spent)
			s.busy = false
			h.heartbeat = false
			switch o.Result {
			case acpclient.TurnOK:
				if o.Stop == acp.StopMaxTokens || o.Stop == acp.StopMaxTurnRequests {
					delete(s.sessions, heartbeatKey)
				}
			case acpclient.TurnAgentError:
			case acpclient.TurnProtocolError:
				delete(s.sessions, heartbeatKey)
			default:
				h.retire(ctx, s)
			}
		})
	}()
}
