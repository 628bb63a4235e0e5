package relay

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/workspace"
	"github.com/nbd-wtf/go-nostr"
)

// TestAttackReadMarkersStayWithTheirAuthor: a read marker says who read
// what and when. Another member asks for Alice's markers every way the
// built relay answers (REQ, a filter without kinds, COUNT, the /query
// and /count bridge, a live subscription) and gets none; an
// unauthenticated REQ naming the kind is asked to AUTH; Alice gets hers.
func TestAttackReadMarkersStayWithTheirAuthor(t *testing.T) {
	owner, alice, mallory := newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", owner.pk, "--allow", alice.pk+","+mallory.pk)
	ca, cm := login(t, b.url, alice), login(t, b.url, mallory)
	marker := func(ch string) nostr.Event {
		return signed(t, alice, workspace.KindAppData, `{"t":1,"ids":[]}`, nostr.Tag{"d", workspace.ReadMarkerPrefix + ch})
	}
	mustPublish(t, ca, marker(chanA))
	mine := nostr.Filter{Kinds: []int{workspace.KindAppData}, Authors: []string{alice.pk}}
	if got, _ := query(t, ca, mine); len(got) != 1 {
		t.Fatalf("Alice reads %d of her markers; want 1", len(got))
	}

	live, err := cm.Subscribe(testCtx(t), nostr.Filters{{Authors: []string{alice.pk}}})
	if err != nil {
		t.Fatal(err)
	}
	<-live.EndOfStoredEvents
	// A notification setting (what Alice muted) is kept the same way.
	fresh := signed(t, alice, workspace.KindAppData, `{"level":"mute"}`, nostr.Tag{"d", workspace.NotifyPrefix + chanB})
	mustPublish(t, ca, fresh)

	for name, f := range map[string]nostr.Filter{
		"by kind and author": mine,
		"by author":          {Authors: []string{alice.pk}},
		"by d":               {Tags: nostr.TagMap{"d": {workspace.ReadMarkerPrefix + chanA}}},
		"everything":         {},
	} {
		got, _ := query(t, cm, f)
		for _, ev := range got {
			if ev.Kind == workspace.KindAppData {
				t.Errorf("REQ %s: Mallory read Alice's marker %s", name, ev.Tags.GetD())
			}
		}
		if n, _, err := cm.Count(testCtx(t), nostr.Filters{{Kinds: []int{workspace.KindAppData}, Authors: f.Authors, Tags: f.Tags}}); err != nil || n != 0 {
			t.Errorf("COUNT %s: Mallory counts %d of Alice's markers (%v); want 0", name, n, err)
		}
		for _, path := range []string{"/query", "/count"} {
			status, body := post(t, mallory, b.http()+path, "", jsonOf(t, []nostr.Filter{f}))
			if status != 200 || strings.Contains(body, workspace.ReadMarkerPrefix) || strings.Contains(body, workspace.NotifyPrefix) || (path == "/count" && name != "everything" && !strings.Contains(body, `"count":0`)) {
				t.Errorf("%s %s: %d %s; want no marker", path, name, status, body)
			}
		}
	}
	select {
	case ev := <-live.Events:
		t.Errorf("Mallory's live subscription got Alice's %d %s", ev.Kind, ev.Tags.GetD())
	case <-time.After(500 * time.Millisecond):
	}

	w := dialWS(t, b.url, nil)
	w.send("REQ", "m", mine)
	for {
		label, fields := w.next()
		if label == "EVENT" {
			t.Fatalf("an unauthenticated REQ got %s", fields)
		}
		if label == "CLOSED" {
			var why string
			json.Unmarshal(fields[1], &why)
			if !strings.HasPrefix(why, "auth-required:") {
				t.Errorf("unauthenticated REQ for markers closed with %q; want auth-required", why)
			}
			break
		}
	}
}

// TestCountExtensions: COUNT's top_level leaves thread replies out and
// exclude_authors the named keys; counts run past one store page.
func TestCountExtensions(t *testing.T) {
	owner, bob := newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", owner.pk, "--allow", bob.pk)
	co, cb := login(t, b.url, owner), login(t, b.url, bob)
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"visibility", "public"}))
	mustPublish(t, cb, signed(t, bob, 9021, "", nostr.Tag{"h", chanA}))
	const top, replies, mine = maxQueryLimit + 200, 30, 5
	at := nostr.Now() - 600
	root := signedAt(t, bob, 9, at, "root", nostr.Tag{"h", chanA})
	mustPublish(t, cb, root)
	for i := range top - 1 {
		mustPublish(t, cb, signedAt(t, bob, 9, at+nostr.Timestamp(i/10), fmt.Sprint("top ", i), nostr.Tag{"h", chanA}))
	}
	for i := range replies {
		mustPublish(t, cb, signedAt(t, bob, 9, at+1, fmt.Sprint("reply ", i), nostr.Tag{"h", chanA}, nostr.Tag{"e", root.ID, "", "root"}))
	}
	for i := range mine {
		mustPublish(t, co, signedAt(t, owner, 9, at+2, fmt.Sprint("mine ", i), nostr.Tag{"h", chanA}))
	}
	w := dialWS(t, b.url, nil)
	if ok, reason := w.auth(owner, b.url); !ok {
		t.Fatalf("AUTH: %s", reason)
	}
	f := map[string]any{"kinds": []int{9}, "#h": []string{chanA}}
	count := func(ext map[string]any) int64 {
		m := map[string]any{}
		for k, v := range f {
			m[k] = v
		}
		for k, v := range ext {
			m[k] = v
		}
		w.send("COUNT", "c", m)
		_, fields := w.awaitLabel("COUNT", "c")
		var res struct{ Count int64 }
		json.Unmarshal(fields[1], &res)
		return res.Count
	}
	for _, tc := range []struct {
		name string
		ext  map[string]any
		want int64
	}{
		{"plain", nil, top + replies + mine},
		{"top_level", map[string]any{"top_level": true}, top + mine},
		{"exclude_authors", map[string]any{"exclude_authors": []string{owner.pk}}, top + replies},
		{"both", map[string]any{"top_level": true, "exclude_authors": []string{owner.pk}}, top},
	} {
		if n := count(tc.ext); n != tc.want {
			t.Errorf("COUNT %s = %d; want %d", tc.name, n, tc.want)
		}
	}
	many := make([]string, maxExcludedAuthors+1)
	for i := range many {
		many[i] = owner.pk
	}
	w.send("COUNT", "x", map[string]any{"kinds": []int{9}, "exclude_authors": many})
	if label, fields := w.next(); label != "CLOSED" || !strings.Contains(string(fields[1]), "exclude_authors") {
		t.Errorf("COUNT with %d excluded authors answered %s %s; want CLOSED naming exclude_authors", len(many), label, fields)
	}
}
