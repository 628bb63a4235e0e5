// Package observer is buzz-acp's NIP-AO observer (spec §15): an
// in-process bus of frames describing what the harness and its agents do,
// taps that record raw ACP traffic as frames, a publisher that sends the
// frames to the owner as encrypted ephemeral events, and the vetting and
// decoding of the owner's control frames.
//
// It does not decide what a control does (the harness applies cancel_turn
// and switch_model to its queues) and holds no relay connection of its
// own: the publisher writes through the Relay its caller hands it.
package observer

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Observer frames (spec §15, NIP-AO). The harness records what it and its
// agents do as frames on an in-process bus of observerBufferCap entries.
// With --relay-observer and a known owner, a publisher (publish.go)
// sends each frame as an ephemeral kind 24200 event whose content is the
// frame's JSON NIP-44 v2 encrypted to the owner, and the owner can send
// control frames back (control.go). Without the flag the bus still
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
	FrameHarnessStarted   = "harness_started"
	FrameAgentInitialized = "agent_initialized"
	FrameLifecycle        = "managed_agent_runtime_lifecycle"
	FrameTurnStarted      = "turn_started"
	FrameSessionConfig    = "session_config_captured"
	FrameSessionResolved  = "session_resolved"
	FrameTurnLiveness     = "turn_liveness"
	FrameTurnCompleted    = "turn_completed"
	FrameTurnError        = "turn_error"
	FrameControlResult    = "control_result"
	FrameACPWrite         = "acp_write"
	FrameACPRead          = "acp_read"
)

// Lifecycle states of managed_agent_runtime_lifecycle.
const (
	LifecycleListening = "listening"
	LifecycleWaking    = "waking"
	LifecycleReady     = "ready"
	LifecycleFailed    = "failed"
)

// EnvStartNonce names the launcher's nonce echoed in lifecycle frames.
const EnvStartNonce = "BUZZ_MANAGED_AGENT_START_NONCE"

// Scope is what a frame is about. slot is -1 when no agent is involved;
// empty strings are null in the frame.
type Scope struct {
	Slot      int    // the agent's slot; -1 for none
	Channel   string // channel UUID; "" for none
	Session   string // ACP session id; "" for none
	Turn      string // turn id; "" for none
	StartedAt string // RFC 3339 start of the turn; "" omits it
}

// NoScope is a frame about the harness as a whole.
var NoScope = Scope{Slot: -1}

// Frame is one frame's JSON (field names as upstream's).
type Frame struct {
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

// Bus is the in-process frame bus: a ring of the last
// observerBufferCap frames, safe for concurrent use. A nil bus records
// nothing.
type Bus struct {
	origin time.Time
	// raw says whether raw ACP traffic is recorded; set once, before any
	// agent starts, when a publisher will read it.
	raw  bool
	wake chan struct{} // capacity 1: a frame was recorded

	mu   sync.Mutex
	seq  uint64 // of the newest frame; 0 before the first
	ring []busEntry
}

// NewBus returns an empty bus; its monotonic clock starts now.
func NewBus() *Bus {
	return &Bus{origin: time.Now(), wake: make(chan struct{}, 1), ring: make([]busEntry, observerBufferCap)}
}

// Emit records a frame of kind about sc. payload is encoded as JSON (a
// json.RawMessage is taken as is); an over-long frame is trimmed to
// observerMaxPlaintext. emit never blocks on a reader.
func (b *Bus) Emit(kind string, sc Scope, payload any) {
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
	f := Frame{MonotonicMs: now.Sub(b.origin).Milliseconds(), Timestamp: now.UTC().Format(time.RFC3339Nano),
		Kind: kind, StartedAt: sc.StartedAt, Payload: raw}
	if sc.Slot >= 0 {
		slot := sc.Slot
		f.AgentIndex = &slot
	}
	f.ChannelID, f.SessionID, f.TurnID = nullable(sc.Channel), nullable(sc.Session), nullable(sc.Turn)
	b.mu.Lock()
	b.seq++
	f.Seq = b.seq
	data, err := json.Marshal(f)
	if err != nil { // the payload was not valid JSON
		f.Payload = json.RawMessage(`{"error":"payload is not JSON"}`)
		data, _ = json.Marshal(f)
	}
	if len(data) > observerMaxPlaintext {
		data = FitFrame(data, observerMaxPlaintext)
	}
	b.ring[b.seq%observerBufferCap] = busEntry{seq: b.seq, kind: kind, raw: kind == FrameACPRead || kind == FrameACPWrite, data: data}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// RecordRaw makes the bus record raw ACP traffic from taps made after it.
// Call it once, before any agent starts, when a publisher will read the
// bus.
func (b *Bus) RecordRaw() { b.raw = true }

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// after returns the oldest frame newer than seq cursor; lost counts the
// frames after cursor that the ring has already overwritten. ok is false
// when there is none yet.
func (b *Bus) after(cursor uint64) (e busEntry, lost uint64, ok bool) {
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

// Last is the seq of the newest frame.
func (b *Bus) Last() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// FitFrame trims the payload of the frame data so that the frame is at most
// limit bytes.
func FitFrame(data []byte, limit int) []byte {
	if len(data) <= limit {
		return data
	}
	var f Frame
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

// Tap records each line written to or read from one agent as a raw ACP
// frame. Lines up to observerRawMaxBytes that are JSON are recorded whole;
// longer ones keep only their head. The zero line state is a fresh line.
type Tap struct {
	bus  *Bus
	kind string // FrameACPWrite or FrameACPRead
	slot int

	line  []byte // the current line, up to observerRawMaxBytes
	bytes int    // length of the current line so far
}

// Feed takes the next bytes of the stream. It is called by one goroutine
// at a time (the connection's writer, or its reader).
func (t *Tap) Feed(p []byte) {
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

func (t *Tap) flush() {
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
	t.bus.Emit(t.kind, Scope{Slot: t.slot}, payload)
}

// Taps returns the taps for slot's agent, or nils when raw traffic is
// not recorded.
func (b *Bus) Taps(slot int) (write, read *Tap) {
	if b == nil || !b.raw {
		return nil, nil
	}
	return &Tap{bus: b, kind: FrameACPWrite, slot: slot}, &Tap{bus: b, kind: FrameACPRead, slot: slot}
}
