package harness

import (
	"context"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// Why an event that does not mention the agent wakes it (Event.Woken),
// also its prompt tag.
const (
	wakeDM     = "dm"           // a direct-message channel of a person and the agent
	wakeThread = "thread reply" // a reply in a thread the agent has replied in (--follow-threads)
)

// maxFollowedThreads bounds the threads remembered as in or not in; the
// set is cleared when full, and the relay is asked again.
const maxFollowedThreads = 4096

// threadSet remembers which threads (by root id) the agent is in: it has
// posted the root or a reply there. Its own posts reach it on the channel
// subscriptions; threads from before this run are asked of the relay once.
type threadSet struct {
	mu sync.Mutex
	in map[string]bool // root → the agent is in it
}

func newThreadSet() *threadSet { return &threadSet{in: map[string]bool{}} }

func (s *threadSet) set(root string, in bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.in) >= maxFollowedThreads {
		clear(s.in)
	}
	s.in[root] = in
}

// own records a post of the agent's: its thread, or the thread it starts.
func (s *threadSet) own(ev *Event) {
	root, _ := ev.thread()
	if root == "" {
		root = ev.ID
	}
	s.set(root, true)
}

// has reports whether the agent is in root's thread in channel, asking the
// relay when this run has not seen it; a failed question counts as not in.
func (h *harness) inThread(ctx context.Context, channel, root string) bool {
	h.threads.mu.Lock()
	in, known := h.threads.in[root]
	h.threads.mu.Unlock()
	if known {
		return in
	}
	agent := h.cfg.AgentHex
	kinds := []int{workspace.KindStream, workspace.KindStreamV2}
	evs, err := retryOnce(ctx, contextFetchTO, func(ctx context.Context) ([]*nostr.Event, error) {
		return h.io.Query(ctx,
			nostr.Filter{IDs: []string{root}, Authors: []string{agent}, Limit: 1},
			nostr.Filter{Kinds: kinds, Authors: []string{agent}, Tags: nostr.TagMap{"e": {root}, "h": {channel}}, Limit: 1})
	})
	if err != nil {
		h.log.Debug("could not ask the relay whether the agent is in a thread", "channel", channel, "root", root, "err", err)
		return false
	}
	in = false
	for _, ev := range evs {
		if ev.PubKey == agent {
			in = true
		}
	}
	h.threads.set(root, in)
	return in
}

// isAgent reports whether pubkey is an agent: its profile carries an auth
// tag (NIP-OA), or it is a sibling of this agent. Agents wake no agent
// without a mention, so two agents in one thread do not answer each
// other for ever.
func (h *harness) isAgent(ctx context.Context, ev *Event) bool {
	if p := h.profiles.get(ctx, []string{ev.PubKey})[ev.PubKey]; p != nil && p.Agent {
		return true
	}
	return h.cfg.Owner != "" && h.siblings.is(ctx, ev, h.cfg.Owner)
}

// wakeUnmentioned says why ev, which does not mention the agent, should
// wake it anyway (wakeDM, wakeThread), or "": a person's message in a DM
// channel, or with --follow-threads a person's reply in a thread the agent
// is in that mentions no one else. Only in the default mentions mode;
// never the agent's own events nor another agent's.
func (h *harness) wakeUnmentioned(ctx context.Context, ev *Event) string {
	if h.cfg.Subscribe != "mentions" || h.cfg.NoMentionFilter || ev.mentions(h.cfg.AgentHex) || ev.PubKey == h.cfg.AgentHex {
		return ""
	}
	if ev.Kind != workspace.KindStream && ev.Kind != workspace.KindStreamV2 {
		return ""
	}
	why := ""
	root, _ := ev.thread()
	if info, ok := h.chans.get(ctx, ev.Channel); ok && info.Type == "dm" {
		why = wakeDM
	} else if h.cfg.FollowThreads && nostrkey.IsLowerHex(root, 64) && !ev.addressedElsewhere(h.cfg.AgentHex) && h.inThread(ctx, ev.Channel, root) {
		// A reply that mentions others, not the agent, is theirs to answer.
		why = wakeThread
	}
	if why == "" || h.isAgent(ctx, ev) {
		return ""
	}
	return why
}

// hearsUnmentioned reports whether channel's subscription must carry
// events that do not mention the agent: with --follow-threads, or for a
// DM channel, in the default mentions mode.
func (h *harness) hearsUnmentioned(channel string) bool {
	if h.cfg.Subscribe != "mentions" {
		return false
	}
	if h.cfg.FollowThreads {
		return true
	}
	info, ok := h.chans.peek(channel)
	return ok && info.Type == "dm"
}
