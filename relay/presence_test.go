package relay

import (
	"testing"
	"time"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// TestPresenceKeptForNewcomers: against the built buzz-relay, a page that
// connects after someone's last presence still learns it: the relay hands
// each key's newest presence of the last presenceKeep with a REQ's stored
// events. An older presence, one superseded, and one carrying a channel
// (h) are not handed out; typing never is.
func TestPresenceKeptForNewcomers(t *testing.T) {
	ana, bo, late := newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--open")
	ac, bc := login(t, b.url, ana), login(t, b.url, bo)
	ctx := testCtx(t)
	at := func(k testKey, kind int, content string, ago time.Duration, tags ...nostr.Tag) nostr.Event {
		ev := signedAt(t, k, kind, nostr.Timestamp(time.Now().Add(-ago).Unix()), content, tags...)
		return ev
	}
	old := at(ana, workspace.KindPresence, "online", 5*time.Second)
	newer := at(ana, workspace.KindPresence, "away", time.Second)
	stale := at(bo, workspace.KindPresence, "online", presenceKeep+time.Minute)
	inChannel := at(bo, workspace.KindPresence, "online", 0, nostr.Tag{"h", chanB})
	typing := at(ana, workspace.KindTyping, "", 0, nostr.Tag{"h", chanB})
	for _, p := range []struct {
		c  *nostr.Relay
		ev nostr.Event
	}{{ac, old}, {ac, newer}, {bc, stale}, {bc, inChannel}, {ac, typing}} {
		p.c.Publish(ctx, p.ev) // ephemeral: the OK is not what is tested
	}
	lc := login(t, b.url, late)
	var got []*nostr.Event
	testexe.WaitFor(t, "ana's newest presence for a newcomer", 10*time.Second, func() bool {
		got, _ = query(t, lc, nostr.Filter{Kinds: []int{workspace.KindPresence, workspace.KindTyping}, Since: ptrTS(time.Now().Add(-time.Hour))})
		return len(got) > 0
	})
	if len(got) != 1 || got[0].ID != newer.ID {
		var ids []string
		for _, ev := range got {
			ids = append(ids, ev.Content+" by "+ev.PubKey[:8])
		}
		t.Fatalf("a newcomer got %v; want only ana's newest presence (away)", ids)
	}
	if got, _ := query(t, lc, nostr.Filter{Kinds: []int{workspace.KindPresence}, Authors: []string{bo.pk}}); len(got) != 0 {
		t.Errorf("bo's stale or channel presence was handed out: %v", got)
	}
	if got, _ := query(t, lc, nostr.Filter{Kinds: []int{workspace.KindPresence}, Since: ptrTS(time.Now().Add(time.Minute))}); len(got) != 0 {
		t.Errorf("a filter's since is not honoured: %v", got)
	}
}

func ptrTS(t time.Time) *nostr.Timestamp {
	ts := nostr.Timestamp(t.Unix())
	return &ts
}
