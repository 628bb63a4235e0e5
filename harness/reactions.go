package harness

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
)

// Reaction contents (frozen: clients render them).
const (
	emojiSeen    = "👀"
	emojiWorking = "💬"
)

// reactions publishes and removes the harness's own reactions, best
// effort, at most maxReactionsInFly at a time.
type reactions struct {
	io   *relayclient.Client
	key  *nostrkey.Secret
	log  *slog.Logger
	sem  chan struct{}
	mu   sync.Mutex
	mine map[string]map[string]string // event id → emoji → reaction id
	wg   sync.WaitGroup
}

func newReactions(io *relayclient.Client, key *nostrkey.Secret, log *slog.Logger) *reactions {
	return &reactions{io: io, key: key, log: log, sem: make(chan struct{}, maxReactionsInFly), mine: map[string]map[string]string{}}
}

func (r *reactions) send(ctx context.Context, ev *nostr.Event, timeout time.Duration, after func(ok bool)) {
	r.wg.Add(1)
	go func() { // bounded by timeout
		defer r.wg.Done()
		r.sem <- struct{}{}
		defer func() { <-r.sem }()
		// Signing here keeps it off the loop and the turn's path to the agent.
		if err := r.key.SignEvent(ev); err != nil {
			if after != nil {
				after(false)
			}
			return
		}
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		_, err := r.io.Publish(pctx, ev)
		if err != nil {
			r.log.Debug("reaction not published", "kind", ev.Kind, "err", err)
		}
		if after != nil {
			after(err == nil)
		}
	}()
}

// pending marks a reaction whose publication is still in flight.
const pending = "pending"

// channelTags returns the h tag of channel, which a reaction to one of
// its events and the deletion of that reaction must carry: the relay
// refuses them without it and serves them only to the channel's readers.
func channelTags(channel string) nostr.Tags {
	if channel == "" {
		return nostr.Tags{}
	}
	return nostr.Tags{{"h", channel}}
}

// add reacts to e with emoji. A removal asked for while the add is in
// flight deletes the reaction as soon as it is published.
func (r *reactions) add(ctx context.Context, e *Event, emoji string) {
	eventID := e.ID
	r.mu.Lock()
	if r.mine[eventID][emoji] != "" {
		r.mu.Unlock()
		return
	}
	if r.mine[eventID] == nil {
		r.mine[eventID] = map[string]string{}
	}
	r.mine[eventID][emoji] = pending
	r.mu.Unlock()
	ev := &nostr.Event{Kind: workspace.KindReaction, CreatedAt: nostr.Now(), Content: emoji, Tags: append(channelTags(e.Channel), nostr.Tag{"e", eventID})}
	r.send(ctx, ev, reactionAddTimeout, func(ok bool) {
		r.mu.Lock()
		state, still := r.mine[eventID][emoji]
		switch {
		case still && state == pending && ok:
			r.mine[eventID][emoji] = ev.ID
		case still && state == pending:
			r.forget(eventID, emoji)
		}
		r.mu.Unlock()
		if ok && !still {
			r.deleteReaction(ctx, ev.ID, e.Channel)
		}
	})
}

// forget drops an entry; r.mu must be held.
func (r *reactions) forget(eventID, emoji string) {
	delete(r.mine[eventID], emoji)
	if len(r.mine[eventID]) == 0 {
		delete(r.mine, eventID)
	}
}

func (r *reactions) deleteReaction(ctx context.Context, id, channel string) {
	del := &nostr.Event{Kind: workspace.KindDeletion, CreatedAt: nostr.Now(), Tags: append(channelTags(channel), nostr.Tag{"e", id})}
	r.send(ctx, del, reactionRemoveTO*2, nil)
}

// reactionAddTimeout is larger than the spec's 0.5 s when the reaction
// goes through the websocket fallback, which waits for OK.
const reactionAddTimeout = 2 * reactionAddTO

// remove deletes our emoji reaction from each event (kind 5).
func (r *reactions) remove(ctx context.Context, evs []*Event, emoji string) {
	for _, e := range evs {
		r.mu.Lock()
		id := r.mine[e.ID][emoji]
		r.forget(e.ID, emoji)
		r.mu.Unlock()
		if id != "" && id != pending {
			r.deleteReaction(ctx, id, e.Channel)
		}
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
		l := h.live.get()
		status := presenceOnline
		switch {
		case h.cfg.NotConfigured != "":
			status = presenceNotConfigured
		case l.paused:
			status = presencePaused
		}
		h.presence(ctx, status, h.presenceTags(l))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.live.now:
		}
	}
}

// Presence statuses (kind 20001 content).
const (
	presenceOnline        = "online"
	presenceNotConfigured = "not configured" // Config.NotConfigured: no model provider
)

func (h *harness) presence(ctx context.Context, status string, tags nostr.Tags) {
	if tags == nil {
		tags = nostr.Tags{}
	}
	ev := &nostr.Event{Kind: workspace.KindPresence, CreatedAt: nostr.Now(), Content: status, Tags: tags}
	if h.cfg.Secret.SignEvent(ev) != nil {
		return
	}
	h.rc.Publish(ctx, ev, false)
}

// threadRoot is the root of the thread ev is in, or its own id when it
// starts one.
func threadRoot(ev *Event) string {
	if root, _ := ev.thread(); root != "" {
		return root
	}
	return ev.ID
}

// ownSub is the subscription of the agent's own messages, from now on.
const ownSub = "own-messages"

// answeredInThread ends the typing of the turn in ev's channel once the
// agent has posted ev in the thread of a message the turn handles: its
// reply is out, and "typing…" would linger until the turn ends (on the
// loop goroutine).
func (h *harness) answeredInThread(ev *Event) {
	cs := h.queues[ev.Channel]
	if cs == nil || cs.turn == nil || cs.turn.stopTyping == nil {
		return
	}
	root := threadRoot(ev)
	for _, b := range cs.turn.batch {
		if threadRoot(b) == root {
			cs.turn.stopTyping()
			return
		}
	}
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
	} else {
		// The agent answers a top-level message in its thread: it types there.
		tags = append(tags, nostr.Tag{"e", last.ID, "", "root"})
	}
	t := time.NewTicker(typingEvery)
	defer t.Stop()
	for {
		ev := &nostr.Event{Kind: workspace.KindTyping, CreatedAt: nostr.Now(), Tags: tags}
		if h.rc.Gated() {
			// The relay rate-limits us (spec §4.6): typing is dropped, not deferred.
			h.log.Debug("rate-limit gate closed; typing dropped", "channel", channel)
		} else if h.cfg.Secret.SignEvent(ev) == nil {
			wctx, cancel := context.WithTimeout(ctx, relayclient.DefaultWriteTimeout)
			h.rc.Publish(wctx, ev, false)
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
