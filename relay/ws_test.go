package relay

import (
	"encoding/json"
	"strings"
	"testing"

	"buzzbox/internal/workspace"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// publishCounting publishes ev on w and returns how many EVENT messages
// for subscription sub arrived before its OK. The relay hands an event to
// live subscribers before it answers OK, so whatever one connection's
// subscriptions get arrives first.
func (w *wsClient) publishCounting(ev nostr.Event, sub string) (n int, ok bool, reason string) {
	w.t.Helper()
	w.send("EVENT", ev)
	for {
		label, f := w.next()
		var id string
		switch {
		case label == "EVENT" && len(f) == 2 && json.Unmarshal(f[0], &id) == nil && id == sub:
			n++
		case label == "OK" && len(f) == 3 && json.Unmarshal(f[0], &id) == nil && id == ev.ID:
			json.Unmarshal(f[1], &ok)
			json.Unmarshal(f[2], &reason)
			return n, ok, reason
		}
	}
}

// awaitLabel reads messages until one with label for subscription sub, and
// returns that message's fields; events for sub on the way are counted.
func (w *wsClient) awaitLabel(label, sub string) (events int, fields []json.RawMessage) {
	w.t.Helper()
	for {
		got, f := w.next()
		var id string
		if len(f) == 0 || json.Unmarshal(f[0], &id) != nil || id != sub {
			continue
		}
		if got == label {
			return events, f
		}
		if got == "EVENT" {
			events++
		}
	}
}

// TestReqReusingIDReplacesIt: NIP-01 says a REQ with a live subscription's
// id replaces it. The relay kept both (the old filters went on matching
// under the same id).
func TestReqReusingIDReplacesIt(t *testing.T) {
	owner := newKey(t)
	w := dialWS(t, execRelay(t, "--owner", owner.pk, "--open"), nil)
	w.send("REQ", "s", nostr.Filter{Kinds: []int{1}, LimitZero: true})
	w.awaitLabel("EOSE", "s")
	w.send("REQ", "s", nostr.Filter{Kinds: []int{7}, LimitZero: true})
	w.awaitLabel("EOSE", "s")
	if n, ok, reason := w.publishCounting(signed(t, owner, 1, "old filter"), "s"); !ok || n != 0 {
		t.Errorf("kind 1 after REQ s was replaced by kinds [7]: %d deliveries on s (OK %v %q); want 0", n, ok, reason)
	}
	if n, ok, reason := w.publishCounting(signed(t, owner, 7, "+", nostr.Tag{"e", owner.pk}), "s"); !ok || n != 1 {
		t.Errorf("kind 7 on the replacing REQ: %d deliveries (OK %v %q); want 1", n, ok, reason)
	}
}

// TestEventOncePerSubscription: an event two filters of one REQ match is
// one event for that subscription, stored and live. The relay sent it
// once per matching filter.
func TestEventOncePerSubscription(t *testing.T) {
	owner := newKey(t)
	w := dialWS(t, execRelay(t, "--owner", owner.pk, "--open"), nil)
	stored := signed(t, owner, 1, "stored")
	if _, ok, reason := w.publishCounting(stored, ""); !ok {
		t.Fatalf("publish: %s", reason)
	}
	both := nostr.Filters{{Kinds: []int{1}}, {Authors: []string{owner.pk}}}
	w.send("REQ", "s", both[0], both[1])
	if n, _ := w.awaitLabel("EOSE", "s"); n != 1 {
		t.Errorf("stored event matched by two filters sent %d times before EOSE; want 1", n)
	}
	if n, ok, reason := w.publishCounting(signed(t, owner, 1, "live"), "s"); !ok || n != 1 {
		t.Errorf("live event matched by two filters: %d deliveries (OK %v %q); want 1", n, ok, reason)
	}
}

// TestClosedReqDeliversNothing: a REQ refused with CLOSED is over. The
// relay closed it for its third filter (over --max-filters) but kept the
// first two listening under its id.
func TestClosedReqDeliversNothing(t *testing.T) {
	owner := newKey(t)
	w := dialWS(t, execRelay(t, "--owner", owner.pk, "--open", "--max-filters", "2"), nil)
	f := nostr.Filter{Kinds: []int{1}}
	w.send("REQ", "s", f, f, f)
	if _, fields := w.awaitLabel("CLOSED", "s"); len(fields) != 2 {
		t.Fatalf("CLOSED with %d fields", len(fields))
	}
	if n, ok, reason := w.publishCounting(signed(t, owner, 1, "after CLOSED"), "s"); !ok || n != 0 {
		t.Errorf("event after the REQ was CLOSED: %d deliveries on s (OK %v %q); want 0", n, ok, reason)
	}
}

// TestAttackOversizeMessageEndsConnection: a message over maxMessageBytes
// is not buffered whole; the relay closes that connection with 1009 and
// keeps serving others.
func TestAttackOversizeMessageEndsConnection(t *testing.T) {
	owner := newKey(t)
	url := execRelay(t, "--owner", owner.pk, "--open")
	w := dialWS(t, url, nil)
	w.next() // the AUTH challenge
	big := `["EVENT",{"content":"` + strings.Repeat("x", maxMessageBytes) + `"}]`
	if err := w.c.Write(testCtx(t), websocket.MessageText, []byte(big)); err != nil {
		t.Fatal(err)
	}
	_, _, err := w.c.Read(testCtx(t))
	if s := websocket.CloseStatus(err); s != websocket.StatusMessageTooBig {
		t.Errorf("after %d bytes the connection read %v (close status %d); want close %d", len(big), err, s, websocket.StatusMessageTooBig)
	}
	other := dialWS(t, url, nil)
	if n, ok, reason := other.publishCounting(signed(t, owner, 1, "still serving"), ""); !ok || n != 0 {
		t.Errorf("publish on a new connection after the oversize one: OK %v %q", ok, reason)
	}
}

// count sends COUNT for f and returns the count.
func (w *wsClient) count(id string, f nostr.Filter) int64 {
	w.t.Helper()
	w.send("COUNT", id, f)
	_, fields := w.awaitLabel("COUNT", id)
	var res struct {
		Count *int64 `json:"count"`
	}
	if len(fields) != 2 || json.Unmarshal(fields[1], &res) != nil || res.Count == nil {
		w.t.Fatalf("COUNT answered with %s", fields)
	}
	return *res.Count
}

// TestCountReactions: NIP-45 reaction and follower counts (kind 7 by #e,
// kind 3 by #p) count what is stored. The relay answered them 0, as
// hyperloglog counts it did not keep.
func TestCountReactions(t *testing.T) {
	owner, fan := newKey(t), newKey(t)
	w := dialWS(t, execRelay(t, "--owner", owner.pk, "--open"), nil)
	post := signed(t, owner, 1, "post")
	w.publishCounting(post, "")
	for _, k := range []testKey{owner, fan} {
		if _, ok, reason := w.publishCounting(signed(t, k, 7, "+", nostr.Tag{"e", post.ID}), ""); !ok {
			t.Fatalf("reaction: %s", reason)
		}
	}
	if n := w.count("c", nostr.Filter{Kinds: []int{7}, Tags: nostr.TagMap{"e": {post.ID}}}); n != 2 {
		t.Errorf("COUNT of reactions = %d; want 2", n)
	}
}

// TestAttackCountShortTagCrashes: a COUNT whose one #e or #p value is
// shorter than 33 characters crashed the relay process (the hyperloglog
// offset read a 33rd character). It must be counted like any filter.
func TestAttackCountShortTagCrashes(t *testing.T) {
	owner := newKey(t)
	url := execRelay(t, "--owner", owner.pk, "--open")
	w := dialWS(t, url, nil)
	if n := w.count("c", nostr.Filter{Kinds: []int{3}, Tags: nostr.TagMap{"p": {"x"}}}); n != 0 {
		t.Errorf("COUNT kind 3 #p [x] = %d; want 0", n)
	}
	if n := dialWS(t, url, nil).count("d", nostr.Filter{Kinds: []int{7}, Tags: nostr.TagMap{"e": {"y"}}}); n != 0 {
		t.Errorf("COUNT kind 7 #e [y] on a new connection = %d; want 0", n)
	}
}

// TestLiveEventWaitsForStoredOnes: an event broadcast while a
// subscription's stored events are being sent waits for them (it would
// otherwise come twice when the store also has it, as the relay sent it
// once live and once stored); once live, events go out at once.
func TestLiveEventWaitsForStoredOnes(t *testing.T) {
	c := &conn{ctx: t.Context(), out: make(chan []byte, 1)}
	c.subscribe("s", nostr.Filters{{Kinds: []int{1}}})
	ev := &nostr.Event{ID: "e1", Kind: 1}
	if ids := c.deliver(ev, c.matched(ev)); len(ids) != 0 {
		t.Fatalf("deliver during the stored phase sent to %v; want it kept", ids)
	}
	if p, later := c.goLive(c.ctx, "s", eoseMsg("s")); len(p) != 1 || p[0] != ev || later {
		t.Fatalf("goLive returned %v, later %v; want the kept event and the EOSE queued", p, later)
	}
	if got := string(<-c.out); got != `["EOSE","s"]` {
		t.Errorf("queued %s; want the EOSE first", got)
	}
	e2 := &nostr.Event{ID: "e2", Kind: 1}
	ms := c.matched(e2)
	if ids := c.deliver(e2, ms); len(ids) != 1 || ids[0] != "s" {
		t.Errorf("deliver when live = %v; want [s]", ids)
	}
	if e3 := (&nostr.Event{ID: "e3", Kind: 7}); c.matched(e3) != nil {
		t.Errorf("matched a non-matching event to %v; want none", c.matched(e3))
	}
	// A subscription replaced under the same id between the match and the
	// delivery (a new REQ "s" for other kinds) does not get the event.
	c.subscribe("s", nostr.Filters{{Kinds: []int{7}}})
	if ids := c.deliver(e2, ms); len(ids) != 0 {
		t.Errorf("deliver to a subscription replaced since the match = %v; want none", ids)
	}
	if p, _ := c.goLive(c.ctx, "s", eoseMsg("s")); len(p) != 0 {
		t.Errorf("the replacing subscription kept %v; want nothing: it does not match", p)
	}
}

// TestRevokedSubscriptionEnds: a subscription closed with "restricted:
// channel access revoked" is over, also where what it asked for is still
// readable (a public channel the member left). The relay sent CLOSED and
// went on delivering under the closed id.
func TestRevokedSubscriptionEnds(t *testing.T) {
	owner, bob := newKey(t), newKey(t)
	url := execRelay(t, "--owner", owner.pk, "--allow", bob.pk)
	co := login(t, url, owner)
	id := "00000000-0000-4000-8000-000000000001"
	h := nostr.Tag{"h", id}
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", h, nostr.Tag{workspace.TagName, "open"}))
	mustPublish(t, co, signed(t, owner, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk}))
	wb := dialWS(t, url, nil)
	if ok, reason := wb.auth(bob, url); !ok {
		t.Fatalf("bob's AUTH: %s", reason)
	}
	wb.send("REQ", "s", nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": {id}}, LimitZero: true})
	wb.awaitLabel("EOSE", "s")
	leave := signed(t, bob, workspace.KindLeaveRequest, "", h)
	wb.send("EVENT", leave)
	if _, f := wb.awaitLabel("CLOSED", "s"); len(f) != 2 || !strings.Contains(string(f[1]), "channel access revoked") {
		t.Fatalf("bob's subscription closed with %s", f)
	}
	if ok, reason := wb.ok(leave.ID); !ok {
		t.Fatalf("leave: %s", reason)
	}
	post := signed(t, owner, workspace.KindStream, "after bob left", h)
	mustPublish(t, co, post)
	// Whatever the post reached bob with came before this probe's EOSE.
	wb.send("REQ", "probe", nostr.Filter{IDs: []string{post.ID}})
	late := 0
	for {
		label, f := wb.next()
		var sub string
		if len(f) == 0 || json.Unmarshal(f[0], &sub) != nil {
			continue
		}
		if label == "EVENT" && sub == "s" {
			late++
		}
		if label == "EOSE" && sub == "probe" {
			break
		}
	}
	if late != 0 {
		t.Errorf("%d events on the revoked subscription; want 0", late)
	}
}
