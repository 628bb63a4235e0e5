package observer

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// NIP-AO on the wire: a frame travels as an ephemeral kind 24200 event
// signed by the agent, its content the frame's JSON NIP-44 v2 encrypted to
// the owner, tagged ["p", owner], ["agent", agent] and ["frame",
// "telemetry"]. The owner's controls come back as kind 24200 events tagged
// ["p", agent] (and ["frame", "control"]).
const (
	agentTag       = "agent"
	frameTag       = "frame"
	frameTelemetry = "telemetry"
	frameControl   = "control"
	ControlSub     = "agent-observer-control" // the control subscription's id (spec §4.4)
)

// Relay is what the publisher needs of the relay connection.
type Relay interface {
	// Gated reports whether the relay's rate-limit gate is closed.
	Gated() bool
	// WaitGate returns once the gate is open, or with ctx's error.
	WaitGate(ctx context.Context) error
	// Publish writes ev to the relay without waiting for its OK.
	Publish(ctx context.Context, ev *nostr.Event) error
	// MaxContent is the relay's limit on one event in bytes; 0 when it
	// named none.
	MaxContent() int
}

// Publisher publishes the bus's frames to the relay, in order, one
// goroutine (run). Frames wait in the bus for the rate-limit gate (spec
// §4.6) and for the pace of one every observerPublishEvery; beyond
// observerPerWindow EVENTs in observerWindow they are dropped and counted,
// and raw ACP traffic stops earlier, at observerRawPerWindow. Turns never
// wait for any of it: they only write to the bus.
type Publisher struct {
	bus     *Bus
	relay   Relay
	key     *nostrkey.Secret
	convKey [32]byte // NIP-44 conversation key between the agent and the owner
	owner   string
	agent   string
	log     *slog.Logger

	every     time.Duration // observerPublishEvery unless a test shortens it
	perWindow int           // observerPerWindow unless a test lowers it
	rawWindow int           // the share of perWindow raw ACP traffic may use

	// Owned by run.
	cursor   uint64      // seq of the last frame taken from the bus
	sent     []time.Time // EVENTs sent within the last observerWindow
	last     time.Time   // when the last EVENT was sent
	lastWarn time.Time

	published atomic.Int64  // frames sent to the relay
	dropped   atomic.Int64  // frames over the rate cap
	lost      atomic.Int64  // frames overwritten in the bus before they could be sent
	failed    atomic.Int64  // frames that could not be encrypted, signed or written
	handled   atomic.Uint64 // seq of the last frame Run has dealt with

	stopOnce sync.Once
	closing  chan struct{} // closed by stop: send what is left, then end
	done     chan struct{} // closed when run has returned
}

// Config says what a Publisher sends, for whom and how fast.
type Config struct {
	Bus     *Bus
	Relay   Relay
	Key     *nostrkey.Secret // the agent's key, which signs the frames
	Agent   string           // the agent's public key (hex)
	Owner   string           // the owner's public key (hex), to whom frames are encrypted
	ConvKey [32]byte         // NIP-44 v2 conversation key between the agent and the owner
	Log     *slog.Logger
	// Every is the pace of one EVENT; zero is observerPublishEvery.
	Every time.Duration
	// PerWindow caps EVENTs per observerWindow; zero is observerPerWindow.
	PerWindow int
}

// NewPublisher returns a publisher of c.Bus's frames; Run starts it.
func NewPublisher(c Config) *Publisher {
	p := &Publisher{bus: c.Bus, relay: c.Relay, key: c.Key, convKey: c.ConvKey, owner: c.Owner,
		agent: c.Agent, log: c.Log.With("component", "observer"),
		every: observerPublishEvery, perWindow: observerPerWindow,
		closing: make(chan struct{}), done: make(chan struct{})}
	if c.Every > 0 {
		p.every = c.Every
	}
	if c.PerWindow > 0 {
		p.perWindow = c.PerWindow
	}
	p.rawWindow = p.perWindow * observerRawPerWindow / observerPerWindow
	return p
}

// Run publishes frames until ctx ends, or, after stop, until the bus is
// empty or observerFlushWait has passed.
func (p *Publisher) Run(ctx context.Context) {
	defer close(p.done)
	if p.drain(ctx, p.closing) {
		// Shutdown: what is left goes out within observerFlushWait, over a
		// socket that may already be closing.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observerFlushWait)
		defer cancel()
		p.drain(fctx, nil)
	}
}

// drain publishes the bus's frames in order. It returns false when ctx
// ends; true when closing is closed, or, with closing nil, once the bus
// has nothing more.
func (p *Publisher) drain(ctx context.Context, closing <-chan struct{}) bool {
	for ctx.Err() == nil {
		e, lost, ok := p.bus.after(p.cursor)
		if lost > 0 {
			p.lost.Add(int64(lost))
			p.log.Warn("observer frames overwritten before they could be published", "lost", lost, "lost_total", p.lost.Load())
		}
		if !ok {
			if closing == nil {
				return true
			}
			select {
			case <-ctx.Done():
				return false
			case <-p.bus.wake:
			case <-closing:
				return true
			}
			continue
		}
		p.cursor = e.seq
		p.publish(ctx, e)
		p.handled.Store(e.seq)
	}
	return false
}

// Stop asks Run to send what is left and waits for it, at most
// observerFlushWait (plus one write).
func (p *Publisher) Stop() {
	p.stopOnce.Do(func() { close(p.closing) })
	t := time.NewTimer(observerFlushWait + publishTimeout)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
}

// publish sends one frame, or drops it when the window is full.
func (p *Publisher) publish(ctx context.Context, e busEntry) {
	if p.relay.Gated() {
		p.log.Debug("rate-limit gate closed; observer frames wait", "seq", e.seq)
		if p.relay.WaitGate(ctx) != nil {
			return
		}
	}
	now := time.Now()
	keep := p.sent[:0]
	for _, at := range p.sent {
		if now.Sub(at) < observerWindow {
			keep = append(keep, at)
		}
	}
	p.sent = keep
	limit := p.perWindow
	if e.raw {
		limit = p.rawWindow
	}
	if len(p.sent) >= limit {
		p.dropped.Add(1)
		if now.Sub(p.lastWarn) >= observerWindow {
			p.lastWarn = now
			p.log.Warn("observer frames over the rate cap are dropped", "kind", e.kind, "dropped_total", p.dropped.Load(),
				"cap", p.perWindow, "raw_cap", p.rawWindow, "window", observerWindow)
		}
		return
	}
	if wait := time.Until(p.last.Add(p.every)); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	ev, err := p.event(e.data, time.Now())
	if err != nil {
		p.failed.Add(1)
		p.log.Warn("observer frame not published", "seq", e.seq, "kind", e.kind, "err", err)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, publishTimeout)
	err = p.relay.Publish(wctx, ev)
	cancel()
	p.last = time.Now()
	p.sent = append(p.sent, p.last)
	if err != nil {
		p.failed.Add(1)
		p.log.Debug("observer frame not published", "seq", e.seq, "kind", e.kind, "err", err)
		return
	}
	p.published.Add(1)
}

// event encrypts the frame data to the owner, trimmed first to what the
// relay takes, and signs the kind 24200 event carrying it.
func (p *Publisher) event(data []byte, at time.Time) (*nostr.Event, error) {
	if limit := plaintextBudget(p.relay.MaxContent()); len(data) > limit {
		data = FitFrame(data, limit)
	}
	content, err := nip44.Encrypt(string(data), p.convKey)
	if err != nil {
		return nil, fmt.Errorf("encrypt observer frame: %w", err)
	}
	ev := &nostr.Event{Kind: workspace.KindObserverFrame, CreatedAt: nostr.Timestamp(at.Unix()), Content: content,
		Tags: nostr.Tags{{"p", p.owner}, {agentTag, p.agent}, {frameTag, frameTelemetry}}}
	if err := p.key.SignEvent(ev); err != nil {
		return nil, fmt.Errorf("sign observer frame: %w", err)
	}
	return ev, nil
}

// plaintextBudget is the largest frame whose kind 24200 event fits a relay
// that takes events of at most maxContent bytes (0: unknown, so NIP-44's
// own limit). NIP-44 v2 pads the plaintext by at most a quarter (past 256
// bytes), adds 67 bytes of version, nonce, length and MAC, and base64
// grows that by a third.
func plaintextBudget(maxContent int) int {
	if maxContent <= 0 {
		return observerMaxPlaintext
	}
	b64 := maxContent - observerEventSlack
	raw := b64*3/4 - 67
	return max(min((raw-2)*4/5, observerMaxPlaintext), 0)
}

// Stats counts what the publisher did with the bus's frames.
type Stats struct {
	Published int64  // frames sent to the relay
	Dropped   int64  // frames over the rate cap
	Lost      int64  // frames overwritten in the bus before they could be sent
	Failed    int64  // frames that could not be encrypted, signed or written
	Handled   uint64 // seq of the last frame dealt with
}

// Stats returns the counters as they stand.
func (p *Publisher) Stats() Stats {
	return Stats{Published: p.published.Load(), Dropped: p.dropped.Load(), Lost: p.lost.Load(),
		Failed: p.failed.Load(), Handled: p.handled.Load()}
}
