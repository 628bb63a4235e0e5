package relay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

func TestPublishSubscribeEOSE(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	c := login(t, r.URL(), owner)

	old := signed(t, owner, 1, "before")
	mustPublish(t, c, old)

	sub, err := c.Subscribe(testCtx(t), nostr.Filters{{Kinds: []int{1}, Authors: []string{owner.pk}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-sub.Events:
		if ev.ID != old.ID {
			t.Fatalf("stored event = %s; want %s", ev.ID, old.ID)
		}
	case <-testCtx(t).Done():
		t.Fatal("stored event not sent")
	}
	<-sub.EndOfStoredEvents

	live := signed(t, owner, 1, "after")
	mustPublish(t, c, live)
	select {
	case ev := <-sub.Events:
		if ev.ID != live.ID || ev.Content != "after" {
			t.Fatalf("live event = %v; want %s", ev, live.ID)
		}
	case <-testCtx(t).Done():
		t.Fatal("live event not delivered")
	}
}

func TestAuthRequiredForReadsAndWrites(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	c := connect(t, r.URL())
	if msg := refused(t, c, signed(t, owner, 1, "x")); !strings.Contains(msg, "auth-required:") {
		t.Errorf("unauthenticated publish refused with %q; want auth-required:", msg)
	}
	if _, reason := query(t, c, nostr.Filter{Kinds: []int{1}}); !strings.HasPrefix(reason, "auth-required:") {
		t.Errorf("unauthenticated REQ closed with %q; want auth-required:", reason)
	}
	// limit:0 subscriptions query nothing but are checked all the same.
	if _, reason := query(t, c, nostr.Filter{Kinds: []int{1}, LimitZero: true}); !strings.HasPrefix(reason, "auth-required:") {
		t.Errorf("unauthenticated limit:0 REQ closed with %q; want auth-required:", reason)
	}
}

func TestStrangerRejected(t *testing.T) {
	owner, stranger := newKey(t), newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	c := login(t, r.URL(), stranger)
	if msg := refused(t, c, signed(t, stranger, 1, "hi")); !strings.Contains(msg, "restricted: not a relay member") {
		t.Errorf("stranger publish refused with %q; want restricted", msg)
	}
	if _, reason := query(t, c, nostr.Filter{Kinds: []int{1}}); !strings.HasPrefix(reason, "restricted:") {
		t.Errorf("stranger REQ closed with %q; want restricted:", reason)
	}
}

func TestAllowlist(t *testing.T) {
	owner, byFile, byFlag, stranger := newKey(t), newKey(t), newKey(t), newKey(t)
	npub, _ := nip19.EncodePublicKey(byFile.pk)
	file := filepath.Join(t.TempDir(), "allow")
	if err := os.WriteFile(file, []byte("# members\n\n"+npub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, Config{Owner: owner.pk, Allow: []string{byFlag.pk}, AllowFile: file})
	for name, k := range map[string]testKey{"owner": owner, "file": byFile, "flag": byFlag} {
		c := login(t, r.URL(), k)
		mustPublish(t, c, signed(t, k, 1, "from "+name))
	}
	c := login(t, r.URL(), stranger)
	refused(t, c, signed(t, stranger, 1, "no"))
}

func TestAllowlistFileBadLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "allow")
	os.WriteFile(file, []byte("nonsense\n"), 0o600)
	_, err := New(Config{DataDir: t.TempDir(), AllowFile: file})
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("New with a bad allowlist = %v; want an error naming line 1", err)
	}
}

func TestInvalidSignature(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	c := login(t, r.URL(), owner)
	ev := signed(t, owner, 1, "signed")
	ev.Sig = strings.Repeat("0", 128)
	if msg := refused(t, c, ev); !strings.Contains(msg, "invalid:") {
		t.Errorf("bad signature refused with %q; want invalid:", msg)
	}
	ev = signed(t, owner, 1, "signed")
	ev.Content = "changed"
	if msg := refused(t, c, ev); !strings.Contains(msg, "invalid:") {
		t.Errorf("bad id refused with %q; want invalid:", msg)
	}
}

func TestAuthEventChecks(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	cases := map[string]func(ev *nostr.Event){
		"wrong challenge": func(ev *nostr.Event) { ev.Tags[1][1] = "00" + ev.Tags[1][1][2:] },
		"wrong host":      func(ev *nostr.Event) { ev.Tags[0][1] = "ws://relay.example.com" },
		"two challenges":  func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"challenge", "other"}) },
		"120 s old":       func(ev *nostr.Event) { ev.CreatedAt -= 120 },
		"120 s ahead":     func(ev *nostr.Event) { ev.CreatedAt += 120 },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			c := connect(t, r.URL())
			awaitChallenge(t, c)
			err := c.Auth(testCtx(t), func(ev *nostr.Event) error {
				spoil(ev)
				return ev.Sign(owner.sk)
			})
			if err == nil || !strings.Contains(err.Error(), "invalid: AUTH refused") {
				t.Fatalf("AUTH = %v; want OK false with invalid: AUTH refused", err)
			}
			if msg := refused(t, c, signed(t, owner, 1, "x")); !strings.Contains(msg, "auth-required") {
				t.Errorf("publish after refused AUTH = %q; want auth-required", msg)
			}
			// The same connection can still log in properly.
			if err := c.Auth(testCtx(t), func(ev *nostr.Event) error { return ev.Sign(owner.sk) }); err != nil {
				t.Fatalf("good AUTH after a bad one: %v", err)
			}
			mustPublish(t, c, signed(t, owner, 1, "x"))
		})
	}
}

func TestAuthLoopbackSpellings(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	port := r.URL()[strings.LastIndex(r.URL(), ":")+1:]
	for _, tc := range []struct{ dial, tag string }{
		{"ws://localhost:" + port, "ws://127.0.0.1:" + port},
		{"ws://127.0.0.1:" + port, "ws://localhost:" + port + "/"},
		{"ws://127.0.0.1:" + port, "ws://LOCALHOST:" + port},
	} {
		c := connect(t, tc.dial)
		awaitChallenge(t, c)
		err := c.Auth(testCtx(t), func(ev *nostr.Event) error {
			ev.Tags[0][1] = tc.tag
			return ev.Sign(owner.sk)
		})
		if err != nil {
			t.Errorf("dial %s, relay tag %s: AUTH = %v; want accepted", tc.dial, tc.tag, err)
			continue
		}
		mustPublish(t, c, signed(t, owner, 1, tc.tag))
	}
}

func TestOpenRelayNeedsNoAuth(t *testing.T) {
	anyone := newKey(t)
	r := startRelay(t, Config{Open: true})
	c := connect(t, r.URL())
	ev := signed(t, anyone, 1, "open")
	mustPublish(t, c, ev)
	evs, reason := query(t, c, nostr.Filter{IDs: []string{ev.ID}})
	if reason != "" || len(evs) != 1 {
		t.Fatalf("query on open relay = %d events, closed %q; want 1", len(evs), reason)
	}
}

func TestDeletionByAuthor(t *testing.T) {
	owner, member := newKey(t), newKey(t)
	r := startRelay(t, Config{Owner: owner.pk, Allow: []string{member.pk}})
	co, cm := login(t, r.URL(), owner), login(t, r.URL(), member)
	ev := signed(t, owner, 1, "to delete")
	mustPublish(t, co, ev)

	if msg := refused(t, cm, signed(t, member, 5, "", nostr.Tag{"e", ev.ID})); !strings.Contains(msg, "blocked") {
		t.Errorf("deletion by another member refused with %q; want blocked", msg)
	}
	if evs, _ := query(t, co, nostr.Filter{IDs: []string{ev.ID}}); len(evs) != 1 {
		t.Fatalf("after a foreign deletion the event is gone")
	}
	// Not even the author's own deletion works without AUTH.
	anon := connect(t, r.URL())
	del := signed(t, owner, 5, "", nostr.Tag{"e", ev.ID})
	refused(t, anon, del)
	if evs, _ := query(t, co, nostr.Filter{IDs: []string{ev.ID}}); len(evs) != 1 {
		t.Fatalf("an unauthenticated deletion removed the event")
	}
	mustPublish(t, co, del)
	if evs, _ := query(t, co, nostr.Filter{IDs: []string{ev.ID}}); len(evs) != 0 {
		t.Fatalf("after the author's deletion query = %s; want nothing", ids(evs))
	}
	// and it cannot come back
	if msg := refused(t, co, ev); !strings.Contains(msg, "deleted") {
		t.Errorf("republishing a deleted event refused with %q; want deleted", msg)
	}
}

// TestAddressDeletionHolds: after the author deletes an address (NIP-09
// "a" tag), an older version of it cannot be published again.
func TestAddressDeletionHolds(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	c := login(t, r.URL(), owner)
	v1 := signed(t, owner, 30078, "one", nostr.Tag{"d", "x"})
	v1.CreatedAt -= 10
	v1.Sign(owner.sk)
	mustPublish(t, c, v1)
	del := signed(t, owner, 5, "", nostr.Tag{"a", fmt.Sprintf("30078:%s:x", owner.pk)})
	del.CreatedAt -= 5
	del.Sign(owner.sk)
	mustPublish(t, c, del)
	if evs, _ := query(t, c, nostr.Filter{Kinds: []int{30078}, Authors: []string{owner.pk}}); len(evs) != 0 {
		t.Errorf("after deleting the address query = %s; want nothing", ids(evs))
	}
	if msg := refused(t, c, v1); !strings.Contains(msg, "deleted") {
		t.Errorf("republishing a deleted address refused with %q; want deleted", msg)
	}
	// A version newer than the deletion is a new write.
	mustPublish(t, c, signed(t, owner, 30078, "three", nostr.Tag{"d", "x"}))
}

func TestReplaceableAndAddressable(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	c := login(t, r.URL(), owner)

	p1 := signed(t, owner, 0, `{"name":"a"}`)
	p1.CreatedAt -= 10
	p1.Sign(owner.sk)
	p2 := signed(t, owner, 0, `{"name":"b"}`)
	mustPublish(t, c, p1)
	mustPublish(t, c, p2)
	evs, _ := query(t, c, nostr.Filter{Kinds: []int{0}, Authors: []string{owner.pk}})
	if len(evs) != 1 || evs[0].ID != p2.ID {
		t.Fatalf("kind 0 = %s; want only %s", ids(evs), p2.ID[:8])
	}
	// An older replacement is not stored over a newer one.
	c.Publish(testCtx(t), p1)
	evs, _ = query(t, c, nostr.Filter{Kinds: []int{0}, Authors: []string{owner.pk}})
	if len(evs) != 1 || evs[0].ID != p2.ID {
		t.Fatalf("kind 0 after an older write = %s; want only %s", ids(evs), p2.ID[:8])
	}

	a1 := signed(t, owner, 30078, "one", nostr.Tag{"d", "x"})
	a1.CreatedAt -= 10
	a1.Sign(owner.sk)
	a2 := signed(t, owner, 30078, "two", nostr.Tag{"d", "x"})
	other := signed(t, owner, 30078, "other", nostr.Tag{"d", "y"})
	for _, ev := range []nostr.Event{a1, a2, other} {
		mustPublish(t, c, ev)
	}
	evs, _ = query(t, c, nostr.Filter{Kinds: []int{30078}, Authors: []string{owner.pk}})
	got := map[string]string{}
	for _, ev := range evs {
		got[ev.Tags.GetD()] = ev.Content
	}
	if len(evs) != 2 || got["x"] != "two" || got["y"] != "other" {
		t.Fatalf("addressable events = %v; want x=two y=other", got)
	}
}

// TestUnrangedKindsAreRegular: kinds past NIP-01's ranges (forum posts,
// workflow triggers and approvals) are all kept, even two from one author
// in the same second.
func TestUnrangedKindsAreRegular(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	c := login(t, r.URL(), owner)
	for _, kind := range []int{40002, 45001, 46020, 46030, 65000} {
		first := signed(t, owner, kind, "first")
		second := signed(t, owner, kind, "second")
		mustPublish(t, c, first)
		mustPublish(t, c, second)
		evs, _ := query(t, c, nostr.Filter{Kinds: []int{kind}, Authors: []string{owner.pk}})
		if len(evs) != 2 {
			t.Errorf("kind %d: stored %s; want both %s and %s", kind, ids(evs), first.ID[:8], second.ID[:8])
		}
	}
}

// ephemeralTestKind is an ephemeral kind with no meaning here: presence
// (20001) is kept a while for newcomers (presence.go), this one is not.
const ephemeralTestKind = 20999

func TestEphemeralForwardedNotStored(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	listener, sender := login(t, r.URL(), owner), login(t, r.URL(), owner)
	sub, err := listener.Subscribe(testCtx(t), nostr.Filters{{Kinds: []int{ephemeralTestKind}}})
	if err != nil {
		t.Fatal(err)
	}
	<-sub.EndOfStoredEvents
	ev := signed(t, owner, ephemeralTestKind, "online")
	mustPublish(t, sender, ev)
	select {
	case got := <-sub.Events:
		if got.ID != ev.ID {
			t.Fatalf("got %s; want %s", got.ID, ev.ID)
		}
	case <-testCtx(t).Done():
		t.Fatal("ephemeral event not forwarded")
	}
	if evs, _ := query(t, sender, nostr.Filter{Kinds: []int{ephemeralTestKind}}); len(evs) != 0 {
		t.Fatalf("ephemeral event stored: %s", ids(evs))
	}
	// Nobody listening still gets an OK true.
	sub.Unsub()
	mustPublish(t, sender, signed(t, owner, ephemeralTestKind, "again"))
}

func TestLimits(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk, MaxFilters: 2, MaxSubscriptions: 2, MaxEventBytes: 1000, EventsPerSecond: 0.001, EventBurst: 5})
	c := login(t, r.URL(), owner)

	f := nostr.Filter{Kinds: []int{1}}
	if _, reason := query(t, c, f, f, f); !strings.HasPrefix(reason, "invalid:") || !strings.Contains(reason, "filters") {
		t.Errorf("REQ with 3 filters closed with %q; want invalid: … filters", reason)
	}
	// A refused REQ does not count as a subscription; each REQ waits for
	// its EOSE or CLOSED (the retries cost nothing when the first works).
	var subs []*nostr.Subscription
	for try := 0; len(subs) < 2; try++ {
		s, err := c.Subscribe(testCtx(t), nostr.Filters{f})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.EndOfStoredEvents:
			subs = append(subs, s)
		case reason := <-s.ClosedReason:
			if try == 50 {
				t.Fatalf("subscription %d closed with %q after 50 tries; want EOSE", len(subs)+1, reason)
			}
		case <-testCtx(t).Done():
			t.Fatal("no EOSE or CLOSED for a subscription within the limit")
		}
	}
	if _, reason := query(t, c, f); !strings.Contains(reason, "subscriptions") {
		t.Errorf("third subscription closed with %q; want a subscriptions limit", reason)
	}
	subs[0].Unsub()
	// The CLOSE frees a place for the next REQ (handled in order; the
	// retries cost nothing when the first works).
	reason := "never tried"
	for try := 0; try < 50 && reason != ""; try++ {
		_, reason = query(t, c, f)
	}
	if reason != "" {
		t.Errorf("subscription after a CLOSE closed with %q; want EOSE", reason)
	}

	if msg := refused(t, c, signed(t, owner, 1, strings.Repeat("x", 2000))); !strings.Contains(msg, "invalid:") {
		t.Errorf("oversize event refused with %q; want invalid:", msg)
	}
	// Five fit the burst of five.
	for i := range 5 {
		mustPublish(t, c, signed(t, owner, 1, "n"+string(rune('a'+i))))
	}
	if msg := refused(t, c, signed(t, owner, 1, "over")); !strings.Contains(msg, "rate-limited:") {
		t.Errorf("event over the burst refused with %q; want rate-limited:", msg)
	}
}

func TestRestartKeepsEvents(t *testing.T) {
	owner := newKey(t)
	dir := t.TempDir()
	r, err := Start(Config{DataDir: dir, Owner: owner.pk, Logger: testLogger(t)}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := login(t, r.URL(), owner)
	var want []string
	for i := range 50 {
		ev := signed(t, owner, 1, "n"+time.Duration(i).String())
		mustPublish(t, c, ev)
		want = append(want, ev.ID)
	}
	c.Close()
	r.Close()

	r2 := startRelay(t, Config{DataDir: dir, Owner: owner.pk})
	if r2.PublicKey() != r.PublicKey() {
		t.Errorf("relay key changed across restart")
	}
	c2 := login(t, r2.URL(), owner)
	evs, _ := query(t, c2, nostr.Filter{IDs: want})
	if len(evs) != len(want) {
		t.Fatalf("after restart %d of %d events", len(evs), len(want))
	}
}

func TestInfoDocument(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	doc := fetchInfo(t, r.HTTPURL())
	for _, want := range []string{`"supported_nips":[1,9,11,29,40,42,45,70,86,98]`, `"auth_required":true`, `"http_bridge"`, `POST /query`, `"pubkey":"` + r.PublicKey()} {
		if !strings.Contains(doc, want) {
			t.Errorf("NIP-11 document lacks %s:\n%s", want, doc)
		}
	}
}
