package harness

import (
	"context"
	"errors"
	"strings"
	"time"

	"buzzbox/harness/acpclient"
	"buzzbox/harness/observer"
)

// startPool spawns --agents processes one after another (§8.2).
func (h *harness) startPool(ctx context.Context) error {
	h.slots = make([]*slot, h.cfg.Agents)
	if h.cfg.NotConfigured != "" {
		for i := range h.slots {
			h.slots[i] = &slot{idx: i, sessions: map[string]*sessionState{}}
		}
		h.poolDown, h.startErr = true, errors.New(h.cfg.NotConfigured)
		h.log.Warn("the agent is not configured; answering messages with what to set", "why", h.cfg.NotConfigured)
		return nil
	}
	live := 0
	for i := range h.slots {
		h.slots[i] = &slot{idx: i, sessions: map[string]*sessionState{}}
		a, err := acpclient.Start(ctx, h.slotSpec(i), h.log.With("slot", i))
		if err != nil {
			h.log.Error("agent failed to start", "slot", i, "err", err)
			h.startErr = err
			h.slots[i].breaker.StartFailed(time.Now())
			continue
		}
		h.agentInitialized(i, a)
		h.slots[i].agent = a
		live++
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if live == 0 {
		// Keep listening so that people who write to the agent are told
		// why it does not answer (startFailed) instead of meeting silence.
		h.poolDown = true
		h.log.Error("no agent could be started; answering messages with the cause until one can (check --agent-command and the agent's own settings)",
			"err", h.startErr, "retry_in", acpclient.CircuitOpenFor)
		return nil
	}
	h.startErr = nil
	if live < len(h.slots) {
		h.log.Warn("fewer agents than asked", "live", live, "asked", len(h.slots))
	}
	return nil
}

// ensureAgents starts empty slots whose circuit is closed.
func (h *harness) ensureAgents(ctx context.Context) {
	if ctx.Err() != nil || h.setup != nil {
		return
	}
	for _, s := range h.slots {
		// An agent that died between turns was noticed by nobody: no turn
		// read its end. Retire it like one that died in a turn, so the slot
		// gets a new agent (which loads the channels' sessions).
		if s.agent != nil && !s.busy && !s.agent.Alive() {
			h.log.Warn("agent exited between turns; replacing it", "slot", s.idx)
			h.retire(ctx, s)
		}
	}
	if h.cfg.NotConfigured != "" {
		return // nothing to start until the launcher is configured and run again
	}
	now := time.Now()
	alive := false
	for _, s := range h.slots {
		alive = alive || s.agent != nil
	}
	for _, s := range h.slots {
		if s.agent != nil || s.respawning || s.breaker.Open(now) {
			continue
		}
		if h.cfg.LazyPool && !alive && !h.waking {
			h.waking = true
			h.lifecycle(observer.LifecycleWaking, "")
		}
		h.spawn(ctx, s, 0)
	}
}

// slotSpec is how slot i's agent is started: h.spec, with taps recording
// its raw traffic when a publisher reads it.
func (h *harness) slotSpec(i int) acpclient.Spec {
	spec := h.spec
	if w, r := h.obs.Taps(i); w != nil { // nil *Tap must not become a non-nil interface
		spec.TapWrite, spec.TapRead = w, r
	}
	return spec
}

// agentInitialized records slot i's agent as initialized.
func (h *harness) agentInitialized(i int, a *acpclient.Agent) {
	h.obs.Emit(observer.FrameAgentInitialized, observer.Scope{Slot: i}, map[string]any{"agentName": a.Name(),
		"protocolVersion": a.Protocol(), "steering": a.Steering(), "pid": a.Pid()})
}

// lifecycle records a managed_agent_runtime_lifecycle frame; errMsg only
// for failed.
func (h *harness) lifecycle(state, errMsg string) {
	p := map[string]any{"state": state, "relayUrl": h.cfg.RelayURL}
	if nonce := h.env.Getenv(observer.EnvStartNonce); nonce != "" {
		p["startNonce"] = nonce
	}
	if errMsg != "" {
		p["error"] = errMsg
	}
	h.obs.Emit(observer.FrameLifecycle, observer.NoScope, p)
}

// spawn starts s's agent after delay in the background.
func (h *harness) spawn(ctx context.Context, s *slot, delay time.Duration) {
	if h.stopping {
		return
	}
	s.respawning = true
	h.spawns.Add(1)
	go func() { // one spawn attempt; reports to the loop; shutdown waits for it
		defer h.spawns.Done()
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				h.do(func() { s.respawning = false })
				return
			case <-h.halt:
				t.Stop()
				h.do(func() { s.respawning = false })
				return
			case <-t.C:
			}
		}
		a, err := acpclient.Start(ctx, h.slotSpec(s.idx), h.log.With("slot", s.idx))
		if err == nil {
			h.agentInitialized(s.idx, a)
		}
		h.do(func() {
			s.respawning = false
			if err != nil {
				h.log.Error("agent respawn failed; circuit open", "slot", s.idx, "err", err)
				s.breaker.StartFailed(time.Now())
				h.startErr = err
				h.startFailed(ctx)
				if h.waking && !h.anyStarting() {
					h.waking = false
					h.lifecycle(observer.LifecycleFailed, err.Error())
				}
				h.checkAlive()
				return
			}
			if ctx.Err() != nil || h.stopping {
				h.strays = append(h.strays, a)
				return
			}
			s.agent = a
			s.sessions = map[string]*sessionState{}
			h.store.releaseSlot(s.idx)
			h.startErr, h.poolDown = nil, false
			if h.waking {
				h.waking = false
				h.lifecycle(observer.LifecycleReady, "")
			}
		})
	}()
}

// retire kills a slot's agent and schedules the respawn (§8.4).
func (h *harness) retire(ctx context.Context, s *slot) {
	if s.agent != nil {
		a := s.agent
		h.retired.Add(1)
		go func() { defer h.retired.Done(); a.Kill() }() // bounded by the kill escalation; shutdown waits
	}
	s.agent = nil
	s.sessions = map[string]*sessionState{}
	h.store.releaseSlot(s.idx)
	d, open := s.breaker.Crashed(time.Now(), h.t.respawn)
	if open {
		h.log.Error("agent keeps crashing; not respawning for a while", "slot", s.idx, "for", acpclient.CircuitOpenFor)
		h.checkAlive()
		return
	}
	h.spawn(ctx, s, jitter(d))
}

// startFailed tells every channel with work waiting that no agent can be
// started, with the cause, when none is alive or starting: the work is
// dead-lettered instead of waiting out the circuit breaker in silence.
func (h *harness) startFailed(ctx context.Context) {
	if h.startErr == nil || h.anyStarting() {
		return
	}
	why := "the agent could not be started (" + clip(strings.TrimPrefix(h.startErr.Error(), "buzz-acp: ")) +
		"): check --agent-command and the agent's own settings"
	if h.cfg.NotConfigured != "" {
		why = "the agent is not configured: " + clipRunes(h.cfg.NotConfigured, maxNotConfigured) + "; set them and start it again"
	}
	for _, cs := range h.queues {
		if cs.turn != nil || len(cs.queue)+len(cs.parked) == 0 {
			continue
		}
		all := append(append([]*Event{}, cs.parked...), cs.queue...)
		cs.queue, cs.parked, cs.reason = nil, nil, ""
		cs.attempts, cs.retryAt = 0, time.Time{}
		h.reacts.clear(ctx, all)
		h.deadLetter(ctx, cs, all, why)
	}
}

// anyStarting reports whether an agent is alive or being started.
func (h *harness) anyStarting() bool {
	for _, s := range h.slots {
		if s.agent != nil || s.respawning {
			return true
		}
	}
	return false
}

// checkAlive stops the harness when no agent lives and none is coming.
func (h *harness) checkAlive() {
	for _, s := range h.slots {
		if s.agent != nil || s.respawning {
			return
		}
	}
	if h.cfg.LazyPool || h.poolDown {
		return
	}
	h.log.Error("no agent alive and no respawn pending; stopping")
	h.requestQuit(1)
}

// shutdown follows §8.6 once the loop has stopped.
func (h *harness) shutdown(ctx context.Context) {
	h.stopping = true
	deadline := time.NewTimer(shutdownWait)
	defer deadline.Stop()
	for h.busyTurns() > 0 {
		select {
		case f := <-h.loop:
			f()
		case <-deadline.C:
			h.log.Warn("turns still running at shutdown; aborting them")
			goto kill
		}
	}
kill:
	// Starts under way end first (those waiting out a delay at once); each
	// hands its agent to the loop, which keeps it as a stray now.
	if h.halt != nil {
		close(h.halt)
	}
	spawned := make(chan struct{})
	go func() { h.spawns.Wait(); close(spawned) }() // ends when the last start has reported
	for waiting := true; waiting; {
		select {
		case f := <-h.loop:
			f()
		case <-spawned:
			waiting = false
		}
	}
	for drained := false; !drained; { // the reports the last starts queued
		select {
		case f := <-h.loop:
			f()
		default:
			drained = true
		}
	}
	done := make(chan struct{})
	n := 0
	agents := h.strays
	for _, s := range h.slots {
		if s.agent != nil {
			agents = append(agents, s.agent)
		}
	}
	for _, a := range agents {
		n++
		go func() { a.Kill(); done <- struct{}{} }() // bounded by kill escalation
	}
	for ; n > 0; n-- {
		<-done
	}
	h.retired.Wait()
	if !h.cfg.NoPresence {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		h.presence(pctx, "offline", nil)
		cancel()
	}
	if h.obsPub != nil {
		h.obsPub.Stop()
	}
	h.reacts.wg.Wait()
	h.pubs.Wait()
}

func (h *harness) busyTurns() int {
	n := 0
	for _, s := range h.slots {
		if s.busy {
			n++
		}
	}
	return n
}
