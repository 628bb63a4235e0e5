package relay

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
)

// Events that refer to other events (reactions, deletions, edits,
// replies, quotes) belong to the channel of what they refer to. The
// write gate refuses a reference to a channel's event unless it carries
// that channel's h tag, so the ordinary h rules decide who reads it; an
// event stored before that rule, without an h tag, is read-checked
// against the channels of the events it refers to. The tags that name
// another event by id are e (NIP-10 replies, NIP-25 reactions, NIP-09
// deletions, edits) and q (NIP-18 quotes).

const (
	// maxRefCache bounds the id → channel cache of referenced events;
	// 65 536 entries of two hex strings are about 10 MB, and the cache
	// starts over when full.
	maxRefCache = 1 << 16
	// maxRefs bounds how many referenced ids one event's check looks up:
	// a deletion of more events than one query returns is cut there, and
	// the refs past it are not checked (they are not deleted either;
	// handleDeletion takes at most as many).
	maxRefs = maxQueryLimit
)

// refCache remembers the channel ("" for none) of events others refer
// to. An event's tags never change, so an entry stays true; the zero
// value is ready to use.
type refCache struct {
	mu sync.Mutex
	m  map[string]string
}

func (rc *refCache) get(id string) (string, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ch, ok := rc.m[id]
	return ch, ok
}

func (rc *refCache) put(id, ch string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.m == nil || len(rc.m) >= maxRefCache {
		rc.m = make(map[string]string)
	}
	rc.m[id] = ch
}

// referencedIDs returns the distinct ids ev's e and q tags name, at most
// maxRefs of them.
func referencedIDs(ev *nostr.Event) []string {
	var ids []string
	seen := make(map[string]bool)
	for _, t := range ev.Tags {
		if len(t) < 2 || t[0] != "e" && t[0] != "q" || len(ids) == maxRefs {
			continue
		}
		if !seen[t[1]] && nostr.IsValid32ByteHex(t[1]) {
			seen[t[1]] = true
			ids = append(ids, t[1])
		}
	}
	return ids
}

// refChannels returns, sorted, the channels of the stored events ev
// refers to. A referenced event without an h tag of its own (one stored
// before the rule) counts as in the channels of the events it refers
// to, one step further.
func (r *Relay) refChannels(ctx context.Context, ev *nostr.Event) []string {
	chans, _ := r.refChannelsDepth(internal(ctx), ev, 1)
	return chans
}

// refChannelsDepth is refChannels looking depth steps past ev's own
// references; complete is false when some referenced event was not found
// (it may be stored later, so the answer is not final).
func (r *Relay) refChannelsDepth(ctx context.Context, ev *nostr.Event, depth int) (chans []string, complete bool) {
	ids := referencedIDs(ev)
	if len(ids) == 0 {
		return nil, true
	}
	set := make(map[string]bool)
	var missing []string
	for _, id := range ids {
		if ch, ok := r.refs.get(id); ok {
			if ch != "" {
				set[ch] = true
			}
			continue
		}
		missing = append(missing, id)
	}
	complete = true
	if len(missing) > 0 {
		var found []*nostr.Event
		if !r.storeClosed.Load() {
			if res, err := r.store.QueryEvents(ctx, nostr.Filter{IDs: missing, Limit: len(missing)}); err == nil {
				for target := range res {
					found = append(found, target)
				}
			}
		}
		complete = len(found) == len(missing)
		for _, target := range found {
			ch, final := channelOf(target), true
			switch {
			case ch != "" || len(referencedIDs(target)) == 0:
			case depth == 0:
				final = false // its own references decide, unread here
			default:
				var up []string
				up, final = r.refChannelsDepth(ctx, target, depth-1)
				if len(up) > 0 {
					ch = up[0]
					for _, c := range up[1:] {
						set[c] = true
					}
				}
				final = final && len(up) <= 1 // the cache holds one channel
			}
			if ch != "" {
				set[ch] = true
			}
			if final {
				r.refs.put(target.ID, ch)
			}
		}
	}
	if len(set) == 0 {
		return nil, complete
	}
	out := make([]string, 0, len(set))
	for ch := range set {
		out = append(out, ch)
	}
	sort.Strings(out)
	return out, complete
}

// checkRefs refuses an event that refers to a channel's events without
// that channel's h tag, or to events of more than one channel: what
// refers to a message is read by who may read the message, and the h
// tag is how the read check knows without looking the message up.
func (r *Relay) checkRefs(ctx context.Context, ev *nostr.Event) string {
	chans := r.refChannels(ctx, ev)
	for _, id := range chans {
		if _, ok := r.chans.get(id); !ok && r.fan != nil && workspace.IsChannelID(id) {
			r.refreshChannel(ctx, id) // made on another instance a moment ago
		}
		if ch, ok := r.chans.get(id); (!ok || ch.private) && ch.members[ev.PubKey] == "" && (r.owner == "" || ev.PubKey != r.owner) {
			// Not told which channel: the author may not read it.
			return "restricted: not a channel member"
		}
	}
	switch {
	case len(chans) == 0:
		return ""
	case len(chans) > 1:
		return "invalid: an event may refer to events of one channel only; this one refers to events of " + strings.Join(chans, ", ") + "; send one event per channel"
	}
	want := chans[0]
	if got := tagValues(ev, "h"); len(got) != 1 || got[0] != want {
		return fmt.Sprintf(`invalid: this event refers to an event of channel %s and needs its tag ["h", %q]`, want, want)
	}
	return ""
}

// refsReadable reports whether c may read ev, an event without an h tag,
// as far as the events it refers to go: in every channel they are in.
func (r *Relay) refsReadable(c caller, ev *nostr.Event) bool {
	for _, id := range r.refChannels(context.Background(), ev) {
		if !r.channelReadableIn(c, ev, id) {
			return false
		}
	}
	return true
}
