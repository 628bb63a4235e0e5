package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/harness/observer"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
)

// ownerView is the owner's side of NIP-AO: a subscription to the kind
// 24200 frames addressed to the owner, decrypted as they arrive.
type ownerView struct {
	t      testing.TB
	w      *world
	key    [32]byte // owner ↔ agent conversation key
	mu     sync.Mutex
	frames []observer.Frame
	events []*nostr.Event
	probes int
}

// observe subscribes the owner to its observer frames and returns once the
// subscription is live (a probe the owner sends to itself has come back).
func (w *world) observe(t testing.TB) *ownerView {
	t.Helper()
	ownerSK, _ := w.owner.AppendHex(nil)
	key, err := nip44.GenerateConversationKey(w.agent.Public().Hex(), string(ownerSK))
	if err != nil {
		t.Fatal(err)
	}
	v := &ownerView{t: t, w: w, key: key}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // reads the owner's connection until the test ends
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case re := <-w.pub.Events():
				if re.Sub == "obs" {
					v.add(re.Ev)
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	w.pub.Subscribe(ctx, "obs", nostr.Filter{Kinds: []int{workspace.KindObserverFrame}, Tags: nostr.TagMap{"p": {w.owner.Public().Hex()}}}, relayclient.SubOptions{Floor: time.Now().Unix()})
	probe := &nostr.Event{Kind: workspace.KindObserverFrame, CreatedAt: nostr.Now(), Content: "probe", Tags: nostr.Tags{{"p", w.owner.Public().Hex()}}}
	if err := w.owner.SignEvent(probe); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the owner's observer subscription", 10*time.Second, func() bool {
		pctx, c := context.WithTimeout(ctx, 2*time.Second)
		defer c()
		w.pub.Publish(pctx, probe, true)
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.probes > 0
	})
	return v
}

func (v *ownerView) add(ev *nostr.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ev.Content == "probe" {
		v.probes++
		return
	}
	v.events = append(v.events, ev)
	plain, err := nip44.Decrypt(ev.Content, v.key)
	if err != nil {
		v.t.Errorf("observer frame %s does not decrypt for the owner: %v", ev.ID, err)
		return
	}
	var f observer.Frame
	if err := json.Unmarshal([]byte(plain), &f); err != nil {
		v.t.Errorf("observer frame %s: %v: %s", ev.ID, err, plain)
		return
	}
	v.frames = append(v.frames, f)
}

// all returns the frames received so far, in seq order.
func (v *ownerView) all() []observer.Frame {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := slices.Clone(v.frames)
	slices.SortFunc(out, func(a, b observer.Frame) int { return int(a.Seq) - int(b.Seq) })
	return out
}

// of returns the received frames of kind.
func (v *ownerView) of(kind string) []observer.Frame {
	var out []observer.Frame
	for _, f := range v.all() {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// results returns the control_result payloads received.
func (v *ownerView) results() []observer.ControlResult {
	var out []observer.ControlResult
	for _, f := range v.of(observer.FrameControlResult) {
		var r observer.ControlResult
		json.Unmarshal(f.Payload, &r)
		out = append(out, r)
	}
	return out
}

// waitResult waits for a control_result matching want's non-empty fields.
func (v *ownerView) waitResult(want observer.ControlResult) observer.ControlResult {
	v.t.Helper()
	var got observer.ControlResult
	waitFor(v.t, "control_result "+jsonString(want), 15*time.Second, func() bool {
		for _, r := range v.results() {
			if (want.Type == "" || r.Type == want.Type) && (want.Status == "" || r.Status == want.Status) &&
				(want.ChannelID == "" || r.ChannelID == want.ChannelID) && (want.RequestID == "" || r.RequestID == want.RequestID) {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

// control sends an observer control frame signed by from over rc, created
// at the given time, and waits for the relay's OK.
func (w *world) control(t testing.TB, rc *relayclient.Subscriber, from *nostrkey.Secret, at time.Time, req any) {
	t.Helper()
	sk, _ := from.AppendHex(nil)
	key, err := nip44.GenerateConversationKey(w.agent.Public().Hex(), string(sk))
	if err != nil {
		t.Fatal(err)
	}
	content, err := nip44.Encrypt(jsonString(req), key)
	if err != nil {
		t.Fatal(err)
	}
	agent := w.agent.Public().Hex()
	ev := &nostr.Event{Kind: workspace.KindObserverFrame, CreatedAt: nostr.Timestamp(at.Unix()), Content: content,
		Tags: nostr.Tags{{"p", agent}, {"agent", agent}, {"frame", "control"}}}
	if err := from.SignEvent(ev); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rc.Publish(ctx, ev, true); err != nil {
		t.Fatalf("publish control: %v", err)
	}
}

// kinds lists the kinds of frames, leaving out raw ACP traffic.
func kinds(frames []observer.Frame) []string {
	var out []string
	for _, f := range frames {
		if f.Kind != observer.FrameACPRead && f.Kind != observer.FrameACPWrite {
			out = append(out, f.Kind)
		}
	}
	return out
}

// fastObserver publishes frames without the ≈6/s pace.
var fastObserver = timing{retryBase: 20 * time.Millisecond, respawn: 10 * time.Millisecond, obsEvery: time.Millisecond}

// TestObserverTurnFrames: with --relay-observer every frame of a full turn
// reaches the owner as a kind 24200 tagged p/agent/frame, encrypted so the
// owner decrypts it, in the documented order, with the turn's ids, the raw
// ACP traffic and the start nonce.
func TestObserverTurnFrames(t *testing.T) {
	w := newWorld(t)
	v := w.observe(t)
	w.startHarnessTiming(w.harnessEnv("echo", observer.EnvStartNonce+"=nonce-7"), fastObserver, "--relay-observer")
	w.mention("hello observer")
	// The relay may forward concurrent EVENTs out of order: wait for every
	// frame up to turn_completed.
	waitFor(t, "every frame up to turn_completed at the owner", 20*time.Second, func() bool {
		fs := v.all()
		return len(v.of(observer.FrameTurnCompleted)) == 1 && fs[len(fs)-1].Seq == uint64(len(fs))
	})

	agent, owner := w.agent.Public().Hex(), w.owner.Public().Hex()
	v.mu.Lock()
	for _, ev := range v.events {
		want := nostr.Tags{{"p", owner}, {"agent", agent}, {"frame", "telemetry"}}
		if ev.PubKey != agent || ev.Kind != workspace.KindObserverFrame || len(ev.Tags) != 3 ||
			!slices.Equal(ev.Tags[0], want[0]) || !slices.Equal(ev.Tags[1], want[1]) || !slices.Equal(ev.Tags[2], want[2]) {
			t.Errorf("frame event by %s kind %d tags %v; want by the agent, kind 24200, tags %v", ev.PubKey, ev.Kind, ev.Tags, want)
		}
		if strings.Contains(ev.Content, "hello observer") || strings.Contains(ev.Content, "turn_") {
			t.Errorf("frame content is not encrypted: %.200s", ev.Content)
		}
	}
	v.mu.Unlock()

	frames := v.all()
	for i, f := range frames {
		if f.Seq != uint64(i+1) {
			t.Fatalf("frame %d has seq %d; want every frame from 1 in order (kinds %v)", i, f.Seq, kinds(frames))
		}
	}
	want := []string{observer.FrameHarnessStarted, observer.FrameAgentInitialized, observer.FrameLifecycle, observer.FrameLifecycle,
		observer.FrameTurnStarted, observer.FrameSessionConfig, observer.FrameSessionResolved, observer.FrameTurnCompleted}
	if got := kinds(frames); !slices.Equal(got, want) {
		t.Errorf("frame kinds = %v; want %v", got, want)
	}
	var states []string
	for _, f := range v.of(observer.FrameLifecycle) {
		var p struct{ State, StartNonce, RelayURL string }
		json.Unmarshal(f.Payload, &p)
		states = append(states, p.State)
		if p.StartNonce != "nonce-7" || p.RelayURL != w.relay.URL() {
			t.Errorf("lifecycle payload %s; want startNonce nonce-7 and the relay URL", f.Payload)
		}
	}
	if !slices.Equal(states, []string{observer.LifecycleListening, observer.LifecycleReady}) {
		t.Errorf("lifecycle states = %v; want listening, ready", states)
	}

	started, resolved, done := v.of(observer.FrameTurnStarted)[0], v.of(observer.FrameSessionResolved)[0], v.of(observer.FrameTurnCompleted)[0]
	var prompt struct {
		SessionID string `json:"sessionId"`
	}
	for _, l := range w.agentLog() {
		if l.Method == "session/prompt" {
			json.Unmarshal(l.Params, &prompt)
		}
	}
	for _, f := range []observer.Frame{started, resolved, done} {
		if f.TurnID == nil || *f.TurnID != *started.TurnID || f.ChannelID == nil || *f.ChannelID != w.channel ||
			f.AgentIndex == nil || *f.AgentIndex != 0 || f.StartedAt == "" {
			t.Errorf("%s frame: turn %v channel %v agent %v startedAt %q; want the turn's ids", f.Kind, f.TurnID, f.ChannelID, f.AgentIndex, f.StartedAt)
		}
	}
	for _, f := range []observer.Frame{resolved, done} {
		if f.SessionID == nil || *f.SessionID != prompt.SessionID {
			t.Errorf("%s sessionId %v; want %s, the session prompted", f.Kind, f.SessionID, prompt.SessionID)
		}
	}
	var sp struct{ TriggeringEventIds []string }
	json.Unmarshal(started.Payload, &sp)
	var dp struct{ Outcome, StopReason string }
	json.Unmarshal(done.Payload, &dp)
	if len(sp.TriggeringEventIds) != 1 || dp.StopReason != "end_turn" || dp.Outcome != "ok" {
		t.Errorf("turn_started %s, turn_completed %s", started.Payload, done.Payload)
	}
	sawPrompt := false
	for _, f := range v.of(observer.FrameACPWrite) {
		var m struct{ Method string }
		json.Unmarshal(f.Payload, &m)
		sawPrompt = sawPrompt || m.Method == "session/prompt"
	}
	if !sawPrompt || len(v.of(observer.FrameACPRead)) == 0 {
		t.Errorf("raw ACP frames: %d written (session/prompt among them: %v), %d read", len(v.of(observer.FrameACPWrite)), sawPrompt, len(v.of(observer.FrameACPRead)))
	}
}

// TestObserverOnlyWithFlag: without --relay-observer no kind 24200 leaves
// the harness and no control subscription is made; with it, both happen.
func TestObserverOnlyWithFlag(t *testing.T) {
	w := newWorld(t)
	frames24200 := func(p *relayProxy) (events, controlREQs int) {
		for _, f := range p.frames() {
			switch {
			case f.verb == "EVENT" && f.kind == workspace.KindObserverFrame:
				events++
			case f.verb == "REQ" && f.sub == observer.ControlSub:
				controlREQs++
			}
		}
		return
	}
	off := newRelayProxy(t, w)
	stop := w.startHarness(w.harnessEnv("echo"), "--relay-url", off.URL())
	w.mention("no observer")
	waitFor(t, "the turn", 15*time.Second, func() bool { return w.count("permission-answer") == 1 })
	stop()
	if events, reqs := frames24200(off); events != 0 || reqs != 0 {
		t.Errorf("without --relay-observer: %d kind 24200 events, %d control REQs; want none", events, reqs)
	}

	on := newRelayProxy(t, w)
	w.startHarness(w.harnessEnv("echo"), "--relay-url", on.URL(), "--relay-observer")
	waitFor(t, "observer frames and the control subscription", 15*time.Second, func() bool {
		events, reqs := frames24200(on)
		return events >= 3 && reqs == 1
	})
}

// TestObserverRateCap: frames beyond the per-window cap are dropped and
// counted, while turns go on unhindered.
func TestObserverRateCap(t *testing.T) {
	w := newWorld(t)
	v := w.observe(t)
	const limit = 4
	started := make(chan *harness, 1)
	tm := fastObserver
	tm.obsPerWindow = limit
	tm.started = func(h *harness) { started <- h }
	w.startHarnessTiming(w.harnessEnv("echo"), tm, "--relay-observer")
	h := <-started
	for i := 1; i <= 2; i++ {
		w.mention("turn " + itoa(i))
		waitFor(t, "the turn", 15*time.Second, func() bool { return w.count("permission-answer") == i })
	}
	p := h.obsPub
	waitFor(t, "the publisher to deal with every frame", 15*time.Second, func() bool {
		return h.obs.Last() > 2*limit && p.Stats().Handled == h.obs.Last()
	})
	total := int64(h.obs.Last())
	if st := p.Stats(); st.Published != limit || st.Dropped != total-limit || st.Lost != 0 || st.Failed != 0 {
		t.Errorf("published %d, dropped %d (lost %d, failed %d) of %d frames; want %d published and the rest dropped",
			st.Published, st.Dropped, st.Lost, st.Failed, total, limit)
	}
	waitFor(t, "the published frames at the owner", 10*time.Second, func() bool { return len(v.all()) == limit })
	for _, f := range v.all() {
		if strings.HasPrefix(f.Kind, "turn_") || strings.HasPrefix(f.Kind, "session_") {
			t.Errorf("frame %d (%s) published after the cap was reached", f.Seq, f.Kind)
		}
	}
}

// TestObserverCancelTurn: a cancel_turn from the owner cancels the running
// turn; one from a stranger, one dated outside ±300 s and one of an unknown
// type change nothing. Liveness pings arrive while the turn runs.
func TestObserverCancelTurn(t *testing.T) {
	w := newWorld(t)
	v := w.observe(t)
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	w.startHarnessTiming(w.harnessEnv("gate", envFakeMarker+"="+gate), fastObserver, "--relay-observer", "--turn-liveness-secs", "5")
	w.mention("long work")
	waitFor(t, "the prompt", 15*time.Second, func() bool { return w.count("session/prompt") == 1 })
	waitFor(t, "a liveness ping", 15*time.Second, func() bool { return len(v.of(observer.FrameTurnLiveness)) >= 1 })
	if f := v.of(observer.FrameTurnLiveness)[0]; f.TurnID == nil || f.SessionID == nil || *f.ChannelID != w.channel {
		t.Errorf("turn_liveness frame %+v; want the turn's ids", f)
	}

	cancel := observer.ControlRequest{Type: observer.ControlCancelTurn, ChannelID: w.channel}
	w.control(t, w.connAs(t, w.stranger), w.stranger, time.Now(), cancel)
	w.control(t, w.pub, w.owner, time.Now().Add(400*time.Second), cancel)
	w.control(t, w.pub, w.owner, time.Now(), observer.ControlRequest{Type: "reboot", ChannelID: w.channel, RequestID: "r-unknown"})
	const idle = "6f1c2d4e-7777-4000-8000-0000000000ef"
	w.control(t, w.pub, w.owner, time.Now(), observer.ControlRequest{Type: observer.ControlCancelTurn, ChannelID: idle, RequestID: "r-idle"})
	if r := v.waitResult(observer.ControlResult{RequestID: "r-unknown"}); r.Status != observer.StatusError || r.Error == "" {
		t.Errorf("unknown control type answered %+v; want status error with a message", r)
	}
	v.waitResult(observer.ControlResult{Type: observer.ControlCancelTurn, Status: observer.StatusNoActiveTurn, ChannelID: idle, RequestID: "r-idle"})
	if n := w.count("session/cancel"); n != 0 {
		t.Fatalf("session/cancel sent %d times after controls from a stranger and a stale owner frame", n)
	}
	// The relay forwards the frames in order and the harness answers in
	// order, so every answer to the earlier frames is in by now.
	if rs := v.results(); len(rs) != 2 {
		t.Errorf("control results %+v; want only the answers to r-unknown and r-idle (the stranger's and the stale frame ignored)", rs)
	}

	w.control(t, w.pub, w.owner, time.Now(), observer.ControlRequest{Type: observer.ControlCancelTurn, ChannelID: w.channel, RequestID: "r-1"})
	v.waitResult(observer.ControlResult{Type: observer.ControlCancelTurn, Status: observer.StatusSent, ChannelID: w.channel, RequestID: "r-1"})
	waitFor(t, "session/cancel", 10*time.Second, func() bool { return w.count("session/cancel") == 1 })
	waitFor(t, "turn_completed", 10*time.Second, func() bool { return len(v.of(observer.FrameTurnCompleted)) == 1 })
	var p struct{ Outcome, StopReason, Reason string }
	json.Unmarshal(v.of(observer.FrameTurnCompleted)[0].Payload, &p)
	if p.StopReason != "cancelled" || p.Reason != "cancel" {
		t.Errorf("turn_completed payload %+v; want stopReason cancelled, reason cancel", p)
	}
}

// setModels returns the modelId and sessionId of each session/set_model
// the fakes received.
func (w *world) setModels() [][2]string {
	var out [][2]string
	for _, l := range w.agentLog() {
		if l.Method == "session/set_model" {
			var p struct{ SessionID, ModelID string }
			json.Unmarshal(l.Params, &p)
			out = append(out, [2]string{p.ModelID, p.SessionID})
		}
	}
	return out
}

// promptSessions returns the sessionId of each session/prompt.
func (w *world) promptSessions() []string {
	var out []string
	for _, l := range w.agentLog() {
		if l.Method == "session/prompt" {
			var p struct{ SessionID string }
			json.Unmarshal(l.Params, &p)
			out = append(out, p.SessionID)
		}
	}
	return out
}

// TestObserverSwitchModelIdle: switch_model on an idle channel checks the
// catalog from session/new; a model it offers makes the next turn open a
// session with session/set_model, one it does not is refused.
func TestObserverSwitchModelIdle(t *testing.T) {
	w := newWorld(t)
	v := w.observe(t)
	w.startHarnessTiming(w.harnessEnv("echo"), fastObserver, "--relay-observer")
	w.mention("first")
	waitFor(t, "the first turn", 15*time.Second, func() bool { return w.count("permission-answer") == 1 })

	w.control(t, w.pub, w.owner, time.Now(), observer.ControlRequest{Type: observer.ControlSwitchModel, ChannelID: w.channel, ModelID: "m9", RequestID: "r-9"})
	v.waitResult(observer.ControlResult{Type: observer.ControlSwitchModel, Status: observer.StatusUnsupportedModel, RequestID: "r-9"})
	w.control(t, w.pub, w.owner, time.Now(), observer.ControlRequest{Type: observer.ControlSwitchModel, ChannelID: w.channel, ModelID: "m2", RequestID: "r-2"})
	v.waitResult(observer.ControlResult{Type: observer.ControlSwitchModel, Status: observer.StatusSwitched, ChannelID: w.channel, RequestID: "r-2"})

	w.mention("second")
	waitFor(t, "the second turn", 15*time.Second, func() bool { return w.count("permission-answer") == 2 })
	sessions := w.promptSessions()
	if n := w.count("session/new"); n != 2 || len(sessions) != 2 || sessions[0] == sessions[1] {
		t.Fatalf("session/new %d times, prompts on %v; want a new session for the second turn", n, sessions)
	}
	if got := w.setModels(); len(got) != 1 || got[0] != [2]string{"m2", sessions[1]} {
		t.Errorf("session/set_model calls (model, session) = %v; want [m2 %s]", got, sessions[1])
	}
	waitFor(t, "the second session's config at the owner", 10*time.Second, func() bool { return len(v.of(observer.FrameSessionConfig)) == 2 })
	cfg := v.of(observer.FrameSessionConfig)
	var p struct {
		Model           string
		ModelStatus     string
		ModelOverridden bool
	}
	json.Unmarshal(cfg[len(cfg)-1].Payload, &p)
	if p.Model != "m2" || p.ModelStatus != observer.StatusSwitched || !p.ModelOverridden {
		t.Errorf("session_config_captured of the new session: %s", cfg[len(cfg)-1].Payload)
	}
}

// TestObserverSwitchModelBusy: switch_model on a busy channel cancels the
// turn and runs its batch again in a new session with the new model.
func TestObserverSwitchModelBusy(t *testing.T) {
	w := newWorld(t)
	v := w.observe(t)
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	w.startHarnessTiming(w.harnessEnv("gate", envFakeMarker+"="+gate), fastObserver, "--relay-observer")
	ev := w.mention("long work")
	waitFor(t, "the prompt", 15*time.Second, func() bool { return w.count("session/prompt") == 1 })

	w.control(t, w.pub, w.owner, time.Now(), observer.ControlRequest{Type: observer.ControlSwitchModel, ChannelID: w.channel, ModelID: "m2", RequestID: "r-b"})
	v.waitResult(observer.ControlResult{Type: observer.ControlSwitchModel, Status: observer.StatusRequeued, RequestID: "r-b"})
	waitFor(t, "the batch prompted again", 15*time.Second, func() bool { return promptHas(w.prompts(), ev.ID) == 2 })
	v.waitResult(observer.ControlResult{Type: observer.ControlSwitchModel, Status: observer.StatusSwitched, RequestID: "r-b"})
	os.WriteFile(gate, nil, 0o600)
	waitFor(t, "the turn to end", 15*time.Second, func() bool { return w.count("permission-answer") == 1 })

	sessions := w.promptSessions()
	if w.count("session/cancel") != 1 || len(sessions) != 2 || sessions[0] == sessions[1] {
		t.Fatalf("session/cancel %d times, prompts on sessions %v; want one cancel and a new session", w.count("session/cancel"), sessions)
	}
	if got := w.setModels(); len(got) != 1 || got[0] != [2]string{"m2", sessions[1]} {
		t.Errorf("session/set_model calls (model, session) = %v; want [m2 %s]", got, sessions[1])
	}
}

// TestObserverRateGate: while the rate-limit gate is closed observer
// frames wait; the turn does not, and the frames follow once it opens.
func TestObserverRateGate(t *testing.T) {
	w := newWorld(t)
	p := newRelayProxy(t, w)
	started := make(chan *harness, 1)
	tm := fastObserver
	tm.started = func(h *harness) { started <- h }
	w.startHarnessTiming(w.harnessEnv("echo"), tm, "--relay-url", p.URL(), "--relay-observer")
	h := <-started
	events := func() []time.Time {
		var out []time.Time
		for _, f := range p.frames() {
			if f.verb == "EVENT" && f.kind == workspace.KindObserverFrame {
				out = append(out, f.at)
			}
		}
		return out
	}
	waitFor(t, "the start frames out", 15*time.Second, func() bool {
		return h.obs.Last() >= 4 && h.obsPub.Stats().Handled == h.obs.Last() && len(events()) == int(h.obsPub.Stats().Published)
	})
	before := len(events())

	const hint = 5 * time.Second
	// The mention reaches the harness on the same socket after the NOTICE.
	armed := p.toHarness("NOTICE", "rate-limited: slow down; retry in 5 s")
	w.mention("while gated")
	waitFor(t, "the turn", 15*time.Second, func() bool { return w.count("permission-answer") == 1 })
	waitFor(t, "the turn's frames after the gate", 20*time.Second, func() bool { return len(events()) > before })
	for _, at := range events()[before:] {
		if d := at.Sub(armed); d < hint*8/10 {
			t.Errorf("observer frame sent %v after the NOTICE, while the gate was closed", d)
		}
	}
}

// TestObserverLazyLifecycle: a lazy pool is listening at start, then waking
// and ready when the first mention starts its agent.
func TestObserverLazyLifecycle(t *testing.T) {
	w := newWorld(t)
	v := w.observe(t)
	w.startHarnessTiming(w.harnessEnv("echo"), fastObserver, "--relay-observer", "--lazy-pool")
	states := func() []string {
		var out []string
		for _, f := range v.of(observer.FrameLifecycle) {
			var p struct{ State string }
			json.Unmarshal(f.Payload, &p)
			out = append(out, p.State)
		}
		return out
	}
	waitFor(t, "listening", 15*time.Second, func() bool { return len(states()) == 1 })
	if len(v.of(observer.FrameAgentInitialized)) != 0 {
		t.Errorf("a lazy pool started an agent before any work")
	}
	w.mention("wake up")
	waitFor(t, "waking and ready", 15*time.Second, func() bool { return len(states()) == 3 })
	if got := states(); !slices.Equal(got, []string{observer.LifecycleListening, observer.LifecycleWaking, observer.LifecycleReady}) {
		t.Errorf("lifecycle states = %v; want listening, waking, ready", got)
	}
}
