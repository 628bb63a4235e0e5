package harness

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Observer frames (spec §15, NIP-AO). The harness records what it and its
// agents do as frames on an in-process bus of observerBufferCap entries.
// With --relay-observer and a known owner, a publisher (observerpub.go)
// sends each frame as an ephemeral kind 24200 event whose content is the
// frame's JSON NIP-44 v2 encrypted to the owner, and the owner can send
// control frames back (observerctl.go). Without the flag the bus still
// records lifecycle and turn frames, but nothing reads them, nothing is
// published and raw ACP traffic is not recorded.
//
// A frame is the JSON object
//
//	{"seq":1,"monotonicMs":12,"timestamp":"2026-…Z","kind":"turn_started",
//	 "agentIndex":0,"channelId":"…","sessionId":null,"turnId":"…",
//	 "startedAt":"2026-…Z","payload":{…}}
//
// seq counts frames from 1 in this process; monotonicMs is the time since
// the bus was created (compare it only within one process); agentIndex,
// channelId, sessionId and turnId are null when they do not apply. The kinds
// and their payloads:
//
//	harness_started          {version, agentPubkey, ownerPubkey, agents, lazyPool, relayUrl}
//	agent_initialized        {agentName, protocolVersion, steering, pid}
//	managed_agent_runtime_lifecycle
//	                         {state: listening|waking|ready|failed, relayUrl, startNonce?, error?}
//	turn_started             {triggeringEventIds, parkedEventIds, reason}
//	session_config_captured  {configOptions, modes, models, model, modelStatus, modelOverridden}
//	session_resolved         {isNewSession}
//	turn_liveness            {elapsedMs, idleMs}
//	turn_completed           {outcome, stopReason, reason, durationMs}
//	turn_error               {outcome, error, stage, durationMs}
//	control_result           {type, status, channelId, modelId?, requestId?, error?}
//	acp_write, acp_read      one JSON-RPC message to or from the agent, or
//	                         {elided, bytes, head} for a line over observerRawMaxBytes
//
// A channel turn records turn_started, session_config_captured (only when
// it opens a session), session_resolved, turn_liveness every
// --turn-liveness-secs, then turn_completed (the prompt ended, or a control
// signal cancelled it) or turn_error. managed_agent_runtime_lifecycle says
// listening once the subscriptions are sent; an eager pool is then ready at
// once, a lazy pool is waking when its first agent starts and ready or
// failed when that ends. BUZZ_MANAGED_AGENT_START_NONCE, when set, is echoed
// as startNonce so a launcher can tell its own harness from an older one.

// Frame kinds.
const (
	frameHarnessStarted   = "harness_started"
	frameAgentInitialized = "agent_initialized"
	frameLifecycle        = "managed_agent_runtime_lifecycle"
	frameTurnStarted      = "turn_started"
	frameSessionConfig    = "session_config_captured"
	frameSessionResolved  = "session_resolved"
	frameTurnLiveness     = "turn_liveness"
	frameTurnCompleted    = "turn_completed"
	frameTurnError        = "turn_error"
	frameControlResult    = "control_result"
	frameACPWrite         = "acp_write"
	frameACPRead          = "acp_read"
)

// Lifecycle states of managed_agent_runtime_lifecycle.
const (
	lifecycleListening = "listening"
	lifecycleWaking    = "waking"
	lifecycleReady     = "ready"
	lifecycleFailed    = "failed"
)

// envStartNonce names the launcher's nonce echoed in lifecycle frames.
const envStartNonce = "BUZZ_MANAGED_AGENT_START_NONCE"

// obsScope is what a frame is about. slot is -1 when no agent is involved;
// empty strings are null in the frame.
type obsScope struct {
	slot      int
	channel   string
	session   string
	turn      string
	startedAt string
}

// noScope is a frame about the harness as a whole.
var noScope = obsScope{slot: -1}

// observerFrame is one frame's JSON (field names as upstream's).
type observerFrame struct {
	Seq         uint64          `json:"seq"`
	MonotonicMs int64           `json:"monotonicMs"`
	Timestamp   string          `json:"timestamp"`
	Kind        string          `json:"kind"`
	AgentIndex  *int            `json:"agentIndex"`
	ChannelID   *string         `json:"channelId"`
	SessionID   *string         `json:"sessionId"`
	TurnID      *string         `json:"turnId"`
	StartedAt   string          `json:"startedAt,omitempty"`
	Payload     json.RawMessage `json:"payload"`
}

// busEntry is one recorded frame.
type busEntry struct {
	seq  uint64
	kind string
	raw  bool   // raw ACP traffic, which has a smaller share of the publish budget
	data []byte // the frame's JSON, at most observerMaxPlaintext bytes
}

// observerBus is the in-process frame bus: a ring of the last
// observerBufferCap frames, safe for concurrent use. A nil bus records
// nothing.
type observerBus struct {
	origin time.Time
	// raw says whether raw ACP traffic is recorded; set once, before any
	// agent starts, when a publisher will read it.
	raw  bool
	wake chan struct{} // capacity 1: a frame was recorded

	mu   sync.Mutex
	seq  uint64 // of the newest frame; 0 before the first
	ring []busEntry
}

func newObserverBus() *observerBus {
	return &observerBus{origin: time.Now(), wake: make(chan struct{}, 1), ring: make([]busEntry, observerBufferCap)}
}

// emit records a frame of kind about sc. payload is encoded as JSON (a
// json.RawMessage is taken as is); an over-long frame is trimmed to
// observerMaxPlaintext. emit never blocks on a reader.
func (b *observerBus) emit(kind string, sc obsScope, payload any) {
	if b == nil {
		return
	}
	raw, ok := payload.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(payload); err != nil {
			raw = json.RawMessage(`{"error":` + strconv.Quote("encode payload: "+err.Error()) + `}`)
		}
	}
	now := time.Now()
	f := observerFrame{MonotonicMs: now.Sub(b.origin).Milliseconds(), Timestamp: now.UTC().Format(time.RFC3339Nano),
		Kind: kind, StartedAt: sc.startedAt, Payload: raw}
	if sc.slot >= 0 {
		slot := sc.slot
		f.AgentIndex = &slot
	}
	f.ChannelID, f.SessionID, f.TurnID = nullable(sc.channel), nullable(sc.session), nullable(sc.turn)
	b.mu.Lock()
	b.seq++
	f.Seq = b.seq
	data, err := json.Marshal(f)
	if err != nil { // the payload was not valid JSON
		f.Payload = json.RawMessage(`{"error":"payload is not JSON"}`)
		data, _ = json.Marshal(f)
	}
	if len(data) > observerMaxPlaintext {
		data = fitFrame(data, observerMaxPlaintext)
	}
	b.ring[b.seq%observerBufferCap] = busEntry{seq: b.seq, kind: kind, raw: kind == frameACPRead || kind == frameACPWrite, data: data}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// after returns the oldest frame newer than seq cursor; lost counts the
// frames after cursor that the ring has already overwritten. ok is false
// when there is none yet.
func (b *observerBus) after(cursor uint64) (e busEntry, lost uint64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seq <= cursor {
		return busEntry{}, 0, false
	}
	want := cursor + 1
	if oldest := b.seq - min(b.seq, observerBufferCap) + 1; want < oldest {
		lost, want = oldest-want, oldest
	}
	return b.ring[want%observerBufferCap], lost, true
}

// last is the seq of the newest frame.
func (b *observerBus) last() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// fitFrame trims the payload of the frame data so that the frame is at most
// limit bytes.
func fitFrame(data []byte, limit int) []byte {
	if len(data) <= limit {
		return data
	}
	var f observerFrame
	if json.Unmarshal(data, &f) != nil {
		return elidedJSON(len(data))
	}
	envelope := len(data) - len(f.Payload)
	f.Payload = fitJSON(f.Payload, limit-envelope)
	out, err := json.Marshal(f)
	if err != nil || len(out) > limit {
		f.Payload = elidedJSON(len(data))
		out, _ = json.Marshal(f)
	}
	return out
}

// fitJSON shortens the string leaves of the JSON value data until it is at
// most limit bytes: each string longer than twice keep keeps keep bytes of
// each end around a note of what was elided, keep halving from
// observerLeafKeep to observerLeafMin. Past that the value becomes
// {"elided":true,"bytes":n}.
func fitJSON(data []byte, limit int) json.RawMessage {
	if len(data) <= limit {
		return data
	}
	for keep := observerLeafKeep; keep >= observerLeafMin; keep /= 2 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // numbers keep their exact text
		var v any
		if dec.Decode(&v) != nil {
			break
		}
		out, err := json.Marshal(trimLeaves(v, keep))
		if err == nil && len(out) <= limit {
			return out
		}
	}
	return elidedJSON(len(data))
}

func elidedJSON(n int) json.RawMessage {
	return json.RawMessage(`{"elided":true,"bytes":` + strconv.Itoa(n) + `}`)
}

// trimLeaves returns v with every string longer than 2×keep (plus the note)
// cut to its first and last keep bytes, on rune boundaries.
func trimLeaves(v any, keep int) any {
	switch x := v.(type) {
	case string:
		return trimString(x, keep)
	case map[string]any:
		for k, e := range x {
			x[k] = trimLeaves(e, keep)
		}
	case []any:
		for i, e := range x {
			x[i] = trimLeaves(e, keep)
		}
	}
	return v
}

func trimString(s string, keep int) string {
	if len(s) <= 2*keep+len(elisionNote(len(s))) {
		return s
	}
	head := keep
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - keep
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + elisionNote(tail-head) + s[tail:]
}

func elisionNote(n int) string { return "…[elided " + strconv.Itoa(n) + " bytes]…" }

// acpTap records each line written to or read from one agent as a raw ACP
// frame. Lines up to observerRawMaxBytes that are JSON are recorded whole;
// longer ones keep only their head. The zero line state is a fresh line.
type acpTap struct {
	bus  *observerBus
	kind string // frameACPWrite or frameACPRead
	slot int

	line  []byte // the current line, up to observerRawMaxBytes
	bytes int    // length of the current line so far
}

// feed takes the next bytes of the stream. It is called by one goroutine
// at a time (the connection's writer, or its reader).
func (t *acpTap) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		t.bytes += len(chunk)
		if room := observerRawMaxBytes - len(t.line); room > 0 {
			t.line = append(t.line, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			return
		}
		t.flush()
		p = p[i+1:]
	}
}

func (t *acpTap) flush() {
	line := bytes.TrimRight(t.line, "\r")
	n := t.bytes
	t.line, t.bytes = t.line[:0], 0
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var payload any
	if n <= observerRawMaxBytes && json.Valid(line) {
		payload = json.RawMessage(bytes.Clone(line))
	} else {
		head := line[:min(len(line), observerRawHeadBytes)]
		payload = map[string]any{"elided": true, "bytes": n, "head": strings.ToValidUTF8(string(head), "")}
	}
	t.bus.emit(t.kind, obsScope{slot: t.slot}, payload)
}

// tapReader passes reads through, feeding them to a tap.
type tapReader struct {
	r   io.Reader
	tap *acpTap
}

func (r tapReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.tap.feed(p[:n])
	}
	return n, err
}

// acpTaps returns the taps for slot's agent, or nils when raw traffic is
// not recorded.
func (b *observerBus) acpTaps(slot int) (write, read *acpTap) {
	if b == nil || !b.raw {
		return nil, nil
	}
	return &acpTap{bus: b, kind: frameACPWrite, slot: slot}, &acpTap{bus: b, kind: frameACPRead, slot: slot}
}
