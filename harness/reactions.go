package harness

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
)

// Reaction contents (frozen: clients render them).
const (
	emojiSeen    = "👀"
	emojiWorking = "💬"
)

// reactions publishes and removes the harness's own reactions, best
// effort, at most maxReactionsInFly at a time.
type reactions struct {
	io   *relayIO
	key  *nostrkey.Secret
	log  *slog.Logger
	sem  chan struct{}
	mu   sync.Mutex
	mine map[string]map[string]string // event id → emoji → reaction id
	wg   sync.WaitGroup
}

func newReactions(io *relayIO, key *nostrkey.Secret, log *slog.Logger) *reactions {
	return &reactions{io: io, key: key, log: log, sem: make(chan struct{}, maxReactionsInFly), mine: map[string]map[string]string{}}
}

func (r *reactions) send(ctx context.Context, ev *nostr.Event, timeout time.Duration, after func()) {
	if err := r.key.SignEvent(ev); err != nil {
		return
	}
	r.wg.Add(1)
	go func() { // bounded by timeout
		defer r.wg.Done()
		r.sem <- struct{}{}
		defer func() { <-r.sem }()
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		if err := r.io.publish(pctx, ev); err != nil {
			r.log.Debug("reaction not published", "kind", ev.Kind, "err", err)
			return
		}
		if after != nil {
			after()
		}
	}()
}

// add reacts to an event with emoji.
func (r *reactions) add(ctx context.Context, eventID, emoji string) {
	r.mu.Lock()
	if r.mine[eventID][emoji] != "" {
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	ev := &nostr.Event{Kind: kindReaction, CreatedAt: nostr.Now(), Content: emoji, Tags: nostr.Tags{{"e", eventID}}}
	r.send(ctx, ev, reactionAddTimeout, func() {
		r.mu.Lock()
		if r.mine[eventID] == nil {
			r.mine[eventID] = map[string]string{}
		}
		r.mine[eventID][emoji] = ev.ID
		r.mu.Unlock()
	})
}

// reactionAddTimeout is larger than the spec's 0.5 s when the reaction
// goes through the websocket fallback, which waits for OK.
const reactionAddTimeout = 2 * reactionAddTO

// remove deletes our emoji reaction from each event (kind 5).
func (r *reactions) remove(ctx context.Context, evs []*Event, emoji string) {
	for _, e := range evs {
		r.mu.Lock()
		id := r.mine[e.ID][emoji]
		delete(r.mine[e.ID], emoji)
		if len(r.mine[e.ID]) == 0 {
			delete(r.mine, e.ID)
		}
		r.mu.Unlock()
		if id == "" {
			continue
		}
		del := &nostr.Event{Kind: kindDeletion, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"e", id}}}
		r.send(ctx, del, reactionRemoveTO*2, nil)
	}
}

// clear removes both reactions.
func (r *reactions) clear(ctx context.Context, evs []*Event) {
	r.remove(ctx, evs, emojiSeen)
	r.remove(ctx, evs, emojiWorking)
}

// presenceLoop publishes online every 60 s until ctx ends.
func (h *harness) presenceLoop(ctx context.Context) {
	t := time.NewTicker(presenceEvery)
	defer t.Stop()
	for {
		h.presence(ctx, "online")
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *harness) presence(ctx context.Context, status string) {
	ev := &nostr.Event{Kind: kindPresence, CreatedAt: nostr.Now(), Content: status, Tags: nostr.Tags{}}
	if h.cfg.Secret.SignEvent(ev) != nil {
		return
	}
	h.rc.publishWS(ctx, ev, false)
}

// typingLoop publishes kind 20002 every 3 s until ctx ends.
func (h *harness) typingLoop(ctx context.Context, channel string, last *Event) {
	if h.cfg.NoTyping {
		return
	}
	tags := nostr.Tags{{"h", channel}}
	if root, parent := last.thread(); root != "" {
		if root != parent {
			tags = append(tags, nostr.Tag{"e", root, "", "root"})
		}
		tags = append(tags, nostr.Tag{"e", parent, "", "reply"})
	}
	t := time.NewTicker(typingEvery)
	defer t.Stop()
	for {
		ev := &nostr.Event{Kind: kindTyping, CreatedAt: nostr.Now(), Tags: tags}
		if h.cfg.Secret.SignEvent(ev) == nil {
			wctx, cancel := context.WithTimeout(ctx, writeTimeout)
			h.rc.publishWS(wctx, ev, false)
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
