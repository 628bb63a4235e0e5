package relay

import (
	"slices"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
)

// Presence (kind 20001) is ephemeral, and clients send it about once a
// minute: a page opened between two would show everyone offline for up to
// a minute. So the relay keeps each key's latest presence in memory for
// presenceKeep and hands it to a REQ asking for presence, after its stored
// events, as if it were stored; live presence follows as before. Only
// presence carrying no channel (h) is kept: it is what every reader of
// the relay may see. Each instance keeps what it broadcast, so with
// several instances on one database every instance learns every key's
// presence from the fan-out.

// presenceKeep is how long a presence stays worth handing out: past the
// 150 s for which the web client counts one (two missed beats and some).
const presenceKeep = 150 * time.Second

// maxPresenceKept bounds the keys kept: a large team's relay members; when
// full of fresh entries a new key is not kept (its live presence still
// reaches subscribers).
const maxPresenceKept = 20000

type presenceCache struct {
	mu sync.Mutex
	m  map[string]*nostr.Event // pubkey → its newest presence
}

// keep records ev when it is a channel-less presence newer than the one held.
func (p *presenceCache) keep(ev *nostr.Event) {
	if ev.Kind != workspace.KindPresence || ev.Tags.Find("h") != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*nostr.Event{}
	}
	if old := p.m[ev.PubKey]; old != nil {
		if old.CreatedAt > ev.CreatedAt {
			return
		}
	} else if len(p.m) >= maxPresenceKept {
		p.prune(time.Now())
		if len(p.m) >= maxPresenceKept {
			return
		}
	}
	p.m[ev.PubKey] = ev
}

// prune drops entries past presenceKeep; p.mu is held.
func (p *presenceCache) prune(now time.Time) {
	for pk, ev := range p.m {
		if now.Sub(ev.CreatedAt.Time()) > presenceKeep {
			delete(p.m, pk)
		}
	}
}

// matching returns the fresh presence events f matches, when f asks for
// presence at all.
func (p *presenceCache) matching(f nostr.Filter) []*nostr.Event {
	if !slices.Contains(f.Kinds, workspace.KindPresence) {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	var out []*nostr.Event
	for _, ev := range p.m {
		if now.Sub(ev.CreatedAt.Time()) <= presenceKeep && f.Matches(ev) {
			out = append(out, ev)
		}
	}
	return out
}
