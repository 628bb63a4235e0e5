package relay

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/dgraph-io/badger/v4"
	eventbadger "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"
)

// Attacks on the trust boundary of the built buzz-relay, from outside:
// real websockets, HTTP requests and git against a subprocess.

const chanB = "9b2c7d1e-5a40-4c8e-8f61-2d3e4f5a6b7c"

// binRelay is a buzz-relay subprocess.
type binRelay struct {
	cmd *exec.Cmd
	url string // ws://127.0.0.1:PORT
}

func (b *binRelay) http() string { return "http" + strings.TrimPrefix(b.url, "ws") }

// stop ends the relay with SIGTERM and waits for it.
func (b *binRelay) stop(t *testing.T) {
	t.Helper()
	b.cmd.Process.Signal(syscall.SIGTERM)
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("buzz-relay after SIGTERM: %v", err)
	}
}

// runBinary starts the built buzz-relay on dir with args, rate limits
// out of the way.
func runBinary(t testing.TB, dir string, args ...string) *binRelay {
	t.Helper()
	exe := testexe.Link(t, "buzz-relay")
	cmd, url := runRelayArgs(t, exe, append([]string{"--data", dir, "--rate", "100000", "--burst", "100000"}, args...)...)
	return &binRelay{cmd: cmd, url: url}
}

func signedAt(t *testing.T, k testKey, kind int, at nostr.Timestamp, content string, tags ...nostr.Tag) nostr.Event {
	t.Helper()
	ev := signed(t, k, kind, content, tags...)
	ev.CreatedAt = at
	if err := ev.Sign(k.sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// bridgeEvents runs POST /query as k and returns the events.
func bridgeEvents(t *testing.T, k testKey, base string, filters ...nostr.Filter) []nostr.Event {
	t.Helper()
	status, body := post(t, k, base+"/query", "", jsonOf(t, filters))
	var evs []nostr.Event
	if err := json.Unmarshal([]byte(body), &evs); status != 200 || err != nil {
		t.Fatalf("POST /query = %d %s (%v)", status, body, err)
	}
	return evs
}

func hasID(evs []nostr.Event, id string) bool {
	for _, ev := range evs {
		if ev.ID == id {
			return true
		}
	}
	return false
}

// TestAttackDeletedChannelReadable: after its owner deletes a private
// channel, a relay member outside it reads its history, or re-creates the
// UUID and so becomes owner of that history. The channel stays hidden,
// closed to writes and reserved, also after a restart; only the relay
// owner may create it again.
func TestAttackDeletedChannelReadable(t *testing.T) {
	root, alice, bob, mallory := newKey(t), newKey(t), newKey(t), newKey(t)
	dir := t.TempDir()
	args := []string{"--owner", root.pk, "--allow", alice.pk + "," + bob.pk + "," + mallory.pk}
	b := runBinary(t, dir, args...)
	ca, cb := login(t, b.url, alice), login(t, b.url, bob)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"name", "secret"}, nostr.Tag{"visibility", "private"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk}))
	secret := signed(t, bob, 9, "the launch date", h)
	mustPublish(t, cb, secret)
	mustPublish(t, ca, signed(t, alice, workspace.KindDeleteGroup, "", h))

	attack := func(b *binRelay) {
		t.Helper()
		cm := login(t, b.url, mallory)
		if evs, _ := query(t, cm, nostr.Filter{IDs: []string{secret.ID}}); len(evs) != 0 {
			t.Errorf("outsider read a deleted private channel's message by id")
		}
		if evs, _ := query(t, cm, nostr.Filter{Kinds: []int{9}}); len(evs) != 0 {
			t.Errorf("outsider read %d messages of a deleted private channel", len(evs))
		}
		if evs := bridgeEvents(t, mallory, b.http(), nostr.Filter{Kinds: []int{9}}); hasID(evs, secret.ID) {
			t.Errorf("outsider read a deleted private channel's message over the bridge")
		}
		if _, reason := query(t, cm, nostr.Filter{Tags: nostr.TagMap{"h": {chanA}}}); reason != "restricted: not a channel member" {
			t.Errorf("outsider REQ on a deleted private channel closed with %q", reason)
		}
		if msg := refused(t, cm, signed(t, mallory, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "public"})); !strings.Contains(msg, "was deleted; only the relay owner") {
			t.Errorf("re-creating a deleted channel refused with %q", msg)
		}
		if evs, _ := query(t, cm, nostr.Filter{IDs: []string{secret.ID}}); len(evs) != 0 {
			t.Errorf("outsider read the history after trying to re-create the channel")
		}
		cb := login(t, b.url, bob)
		if msg := refused(t, cb, signed(t, bob, 9, "still here?", h)); !strings.Contains(msg, "restricted: channel "+chanA+" was deleted") {
			t.Errorf("post to a deleted channel refused with %q", msg)
		}
		ca := login(t, b.url, alice)
		if msg := refused(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", mallory.pk})); !strings.Contains(msg, "was deleted") {
			t.Errorf("add to a deleted channel refused with %q", msg)
		}
	}
	attack(b)
	b.stop(t)
	b = runBinary(t, dir, args...)
	attack(b)

	// The relay owner may take the UUID back.
	cr := login(t, b.url, root)
	mustPublish(t, cr, signed(t, root, workspace.KindCreateGroup, "", h, nostr.Tag{"name", "again"}))
	mustPublish(t, cr, signed(t, root, 9, "new era", h))
}

// TestAttackInviteIntoDeletedChannel: an invite naming a deleted channel
// must not make its redeemer a member of it, able to read its history
// (nor bring the channel back with new state).
func TestAttackInviteIntoDeletedChannel(t *testing.T) {
	owner, mallory := newKey(t), newKey(t)
	dir := t.TempDir()
	b := runBinary(t, dir, "--owner", owner.pk)
	co := login(t, b.url, owner)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", nostr.Tag{"h", chanB}, nostr.Tag{"visibility", "public"}))
	secret := signed(t, owner, 9, "before the deletion", h)
	mustPublish(t, co, secret)
	token, _, _ := createInvite(t, b.http(), owner, map[string]any{"channels": []string{chanA, chanB}})
	mustPublish(t, co, signed(t, owner, workspace.KindDeleteGroup, "", h))
	if status, rep := manage(t, b.http(), owner, "createinvite", map[string]any{"channels": []string{chanA}}); status == http.StatusOK && rep.Error == "" {
		t.Errorf("createinvite for a deleted channel succeeded: %s", rep.Result)
	}

	status, body := redeemInvite(t, b.http(), mallory, token, nip98.Options{})
	if status != http.StatusOK || strings.Contains(string(body), chanA) {
		t.Errorf("redeem = %d %s; want 200 joining only the live channel", status, body)
	}
	attack := func(b *binRelay) {
		t.Helper()
		cm := login(t, b.url, mallory)
		if evs, _ := query(t, cm, nostr.Filter{IDs: []string{secret.ID}}); len(evs) != 0 {
			t.Errorf("the redeemer of an invite read a deleted channel's history")
		}
		if meta, members := channelState(t, cm, chanA); meta != nil || members != nil {
			t.Errorf("a deleted channel has state again: %v %v", meta, members)
		}
	}
	attack(b)
	b.stop(t)
	attack(runBinary(t, dir, "--owner", owner.pk))
}

// TestAttackDeletedChannelStillAdmits: a key that used the relay only as a
// member of a channel loses the relay with the channel.
func TestAttackDeletedChannelStillAdmits(t *testing.T) {
	owner, bob := newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", owner.pk)
	co := login(t, b.url, owner)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", h))
	mustPublish(t, co, signed(t, owner, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk}))
	if reason := publishAs(t, b.url, bob); reason != "" {
		t.Fatalf("channel member refused before the deletion: %s", reason)
	}
	mustPublish(t, co, signed(t, owner, workspace.KindDeleteGroup, "", h))
	if reason := publishAs(t, b.url, bob); !strings.Contains(reason, "not a relay member") {
		t.Errorf("member of a deleted channel publishes: %q; want not a relay member", reason)
	}
}

// TestAttackEventNamingTwoChannels: an event tagged with an open channel
// and a private one, sent by a non-member of the private one, must not
// land in it.
func TestAttackEventNamingTwoChannels(t *testing.T) {
	alice, mallory := newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", mallory.pk)
	ca, cm := login(t, b.url, alice), login(t, b.url, mallory)
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"visibility", "public"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", nostr.Tag{"h", chanB}, nostr.Tag{"visibility", "private"}))
	mustPublish(t, cm, signed(t, mallory, workspace.KindJoinRequest, "", nostr.Tag{"h", chanA}))

	forged := signed(t, mallory, 9, "click here", nostr.Tag{"h", chanA}, nostr.Tag{"h", chanB})
	if msg := refused(t, cm, forged); !strings.Contains(msg, "invalid: an event belongs to one channel; this one has 2 h tags") {
		t.Errorf("event naming two channels refused with %q", msg)
	}
	status, body := post(t, mallory, b.http()+"/events", "", jsonOf(t, forged))
	if status != http.StatusBadRequest || !strings.Contains(body, "h tags") {
		t.Errorf("bridge POST of an event naming two channels = %d %s", status, body)
	}
	if evs, _ := query(t, ca, nostr.Filter{Tags: nostr.TagMap{"h": {chanB}}, Kinds: []int{9}}); len(evs) != 0 {
		t.Errorf("private channel shows %d events from a non-member", len(evs))
	}
}

// TestAttackStoredMultiChannelEventHidden: an event naming a public and a
// private channel that is already in the store (written before the write
// gate refused such events) is readable only by who may read both.
func TestAttackStoredMultiChannelEventHidden(t *testing.T) {
	alice, mallory := newKey(t), newKey(t)
	dir := t.TempDir()
	args := []string{"--owner", alice.pk, "--allow", mallory.pk}
	b := runBinary(t, dir, args...)
	ca, cm := login(t, b.url, alice), login(t, b.url, mallory)
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"visibility", "public"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", nostr.Tag{"h", chanB}, nostr.Tag{"visibility", "private"}))
	mustPublish(t, cm, signed(t, mallory, workspace.KindJoinRequest, "", nostr.Tag{"h", chanA}))
	b.stop(t)

	old := signed(t, alice, 9, "for the private channel only", nostr.Tag{"h", chanA}, nostr.Tag{"h", chanB})
	store := &badgerStore{&eventbadger.BadgerBackend{
		Path: filepath.Join(dir, "events"), MaxLimit: maxQueryLimit,
		BadgerOptionsModifier: func(o badger.Options) badger.Options { return o.WithLogger(nil) },
	}}
	if err := store.Init(); err != nil {
		t.Fatal(err)
	}
	if err := store.SaveEvent(t.Context(), &old); err != nil {
		t.Fatal(err)
	}
	store.Close()

	b = runBinary(t, dir, args...)
	cm = login(t, b.url, mallory)
	for _, f := range []nostr.Filter{{Kinds: []int{9}}, {IDs: []string{old.ID}}, {Tags: nostr.TagMap{"h": {chanA}}}} {
		if evs, _ := query(t, cm, f); strings.Contains(ids(evs), old.ID[:8]) {
			t.Errorf("REQ %v: outsider of the private channel read the event", f)
		}
		if evs := bridgeEvents(t, mallory, b.http(), f); hasID(evs, old.ID) {
			t.Errorf("POST /query %v: outsider of the private channel read the event", f)
		}
	}
	ca = login(t, b.url, alice)
	if evs, _ := query(t, ca, nostr.Filter{IDs: []string{old.ID}}); len(evs) != 1 {
		t.Errorf("a member of both channels cannot read the event")
	}
}

// TestAttackGuestPushes: a member added as a guest, in any of the forms
// the relay and the CLI write, reads a shared repository but never gets
// git-receive-pack, also not through a duplicated service parameter or a
// path that disagrees with it.
func TestAttackGuestPushes(t *testing.T) {
	needGit(t)
	alice := newKey(t)
	guests := []testKey{newKey(t), newKey(t), newKey(t)}
	allow := guests[0].pk + "," + guests[1].pk + "," + guests[2].pk
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", allow)
	env := gitEnv(t)
	repoURL := b.http() + "/git/" + alice.pk + "/proj.git"

	work := t.TempDir()
	gitOK(t, env, work, "init", "--quiet", "-b", "main")
	os.WriteFile(filepath.Join(work, "README"), []byte("hello\n"), 0o644)
	gitOK(t, env, work, "add", "README")
	gitOK(t, env, work, "commit", "--quiet", "-m", "first")
	gitOK(t, env, work, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "main")...)

	ca := login(t, b.url, alice)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", guests[0].pk, "", "guest"}))                // 39002 form
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", guests[1].pk}, nostr.Tag{"role", "guest"})) // CLI form
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", guests[2].pk, "guest"}))                    // NIP-29 form
	mustPublish(t, ca, signed(t, alice, workspace.KindRepoAnnouncement, "", nostr.Tag{"d", "proj"}, nostr.Tag{"buzz-channel", chanA}))
	_, members := channelState(t, ca, chanA)
	got := roles(members)
	for i, g := range guests {
		if got[g.pk] != roleGuest {
			t.Errorf("guest %d has role %q in 39002; want guest", i, got[g.pk])
		}
	}

	for i, g := range guests {
		dst := filepath.Join(t.TempDir(), "c")
		gitOK(t, env, "", append(authed(t, g, repoURL), "clone", "--quiet", repoURL, dst)...)
		os.WriteFile(filepath.Join(dst, "EVIL"), []byte("guest\n"), 0o644)
		gitOK(t, env, dst, "add", "EVIL")
		gitOK(t, env, dst, "commit", "--quiet", "-m", "from a guest")
		if out, err := gitRun(t, env, dst, append(authed(t, g, repoURL), "push", "--quiet", "origin", "main")...); err == nil {
			t.Errorf("guest %d pushed: %s", i, out)
		}
	}

	g := guests[0]
	auth := "Nostr " + gitToken(t, g, repoURL)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/info/refs?service=git-upload-pack&service=git-receive-pack"},
		{"GET", "/info/refs?service=git-receive-pack"},
		{"POST", "/git-upload-pack?service=git-receive-pack"},
		{"POST", "/git-receive-pack"},
	} {
		req, _ := http.NewRequestWithContext(testCtx(t), tc.method, repoURL+tc.path, strings.NewReader("0000"))
		req.Header.Set("Authorization", auth)
		if tc.method == "POST" {
			req.Header.Set("Content-Type", "application/x-git-upload-pack-request")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode == 200 || strings.Contains(resp.Header.Get("Content-Type"), "receive-pack") || strings.Contains(string(body), "report-status") {
			t.Errorf("guest %s %s = %d %s %q; want a refusal", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	// A role the relay does not know would be no guest.
	if msg := refused(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", newKey(t).pk, "", "root"})); !strings.Contains(msg, `invalid: unknown role "root"`) {
		t.Errorf("add with an unknown role refused with %q", msg)
	}
}

// TestAttackCreatedAtOutOfWindow: a kind 0 dated 2038 would pin a profile
// for good, one dated 1970 is forged history. Both are refused, naming
// the limit and its flag; --max-future and --max-age move the bounds.
func TestAttackCreatedAtOutOfWindow(t *testing.T) {
	alice := newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk)
	ca := login(t, b.url, alice)
	y2038 := nostr.Timestamp(2145916800)
	if msg := refused(t, ca, signedAt(t, alice, 0, y2038, `{"name":"forever"}`)); !strings.Contains(msg, "invalid: created_at 2145916800 is more than 15m0s in the future (--max-future)") {
		t.Errorf("profile dated 2038 refused with %q", msg)
	}
	if msg := refused(t, ca, signedAt(t, alice, 1, 1, "1970")); !strings.Contains(msg, "invalid: created_at 1 is more than 26280h0m0s in the past (--max-age)") {
		t.Errorf("note dated 1970 refused with %q", msg)
	}
	status, body := post(t, alice, b.http()+"/events", "", jsonOf(t, signedAt(t, alice, 0, y2038, `{"name":"forever"}`)))
	if status != http.StatusBadRequest || !strings.Contains(body, "--max-future") {
		t.Errorf("bridge POST of a profile dated 2038 = %d %s", status, body)
	}
	if evs, _ := query(t, ca, nostr.Filter{Kinds: []int{0}, Authors: []string{alice.pk}}); len(evs) != 0 {
		t.Errorf("a profile dated 2038 was stored")
	}
	if info := fetchInfo(t, b.http()); !strings.Contains(info, `"created_at_lower_limit":94608000`) || !strings.Contains(info, `"created_at_upper_limit":900`) {
		t.Errorf("NIP-11 document without the created_at limits: %s", info)
	}
	now := time.Now()
	mustPublish(t, ca, signedAt(t, alice, 1, nostr.Timestamp(now.Add(-2*365*24*time.Hour).Unix()), "two years old"))
	if msg := refused(t, ca, signedAt(t, alice, 1, nostr.Timestamp(now.Add(30*time.Minute).Unix()), "half an hour ahead")); !strings.Contains(msg, "--max-future") {
		t.Errorf("note half an hour ahead refused with %q", msg)
	}

	b = runBinary(t, t.TempDir(), "--owner", alice.pk, "--max-future", "1h", "--max-age", "1h")
	ca = login(t, b.url, alice)
	mustPublish(t, ca, signedAt(t, alice, 1, nostr.Timestamp(now.Add(30*time.Minute).Unix()), "half an hour ahead"))
	if msg := refused(t, ca, signedAt(t, alice, 1, nostr.Timestamp(now.Add(-2*time.Hour).Unix()), "two hours old")); !strings.Contains(msg, "is more than 1h0m0s in the past (--max-age)") {
		t.Errorf("note two hours old under --max-age 1h refused with %q", msg)
	}
}

// TestAttackEventSizeEscapes: control characters take six bytes each in
// JSON; an event whose serialised form is over --max-event-bytes is
// refused however short its content string is. An event of exactly the
// limit passes.
func TestAttackEventSizeEscapes(t *testing.T) {
	alice := newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk)
	ca := login(t, b.url, alice)
	big := signed(t, alice, 1, strings.Repeat("\x01", 55000))
	wire, _ := big.MarshalJSON()
	if len(wire) <= defaultMaxEventBytes {
		t.Fatalf("test event is %d bytes; want over %d", len(wire), defaultMaxEventBytes)
	}
	want := fmt.Sprintf("invalid: event of %d bytes is over the %d byte limit (--max-event-bytes)", len(wire), defaultMaxEventBytes)
	if msg := refused(t, ca, big); !strings.Contains(msg, want) {
		t.Errorf("escaped event of %d bytes refused with %q; want %q", len(wire), msg, want)
	}
	// The store holds at most 64 KiB per string: fill tags instead.
	const tags = 5
	filled := func(fill int, last string) nostr.Event {
		var ts []nostr.Tag
		for i := range tags {
			v := strings.Repeat("a", fill/tags)
			if i == 0 {
				v += strings.Repeat("a", fill%tags)
			}
			if i == tags-1 {
				v = v[len(last):] + last
			}
			ts = append(ts, nostr.Tag{"x", v})
		}
		return signed(t, alice, 1, "", ts...)
	}
	base := filled(0, "")
	fill := defaultMaxEventBytes - eventJSONLen(&base)
	exact := filled(fill, "")
	if w, _ := exact.MarshalJSON(); len(w) != defaultMaxEventBytes {
		t.Fatalf("boundary event is %d bytes; want %d", len(w), defaultMaxEventBytes)
	}
	mustPublish(t, ca, exact)
	over := filled(fill, `"`) // the same length, but the quote is escaped: one byte more
	if w, _ := over.MarshalJSON(); len(w) != defaultMaxEventBytes+1 {
		t.Fatalf("over-limit event is %d bytes; want %d", len(w), defaultMaxEventBytes+1)
	}
	if msg := refused(t, ca, over); !strings.Contains(msg, "byte limit") {
		t.Errorf("event one byte over the limit refused with %q", msg)
	}
}

// TestAttackCountStopsAt250: COUNT and the bridge's /count report every
// match, not the store's default page, through each path: the store's
// counter (the relay owner, no tags), a re-checked tag filter, and a
// caller from whom private channels are hidden. More than two pages of
// maxQueryLimit, several events a second, so pages meet inside a second.
func TestAttackCountStopsAt250(t *testing.T) {
	const total = 2*maxQueryLimit + 100
	owner, alice := newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", owner.pk, "--allow", alice.pk)
	ca, co := login(t, b.url, alice), login(t, b.url, owner)
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"visibility", "public"}))
	mustPublish(t, co, signed(t, owner, workspace.KindCreateGroup, "", nostr.Tag{"h", chanB}, nostr.Tag{"visibility", "private"}))
	mustPublish(t, co, signed(t, owner, 9, "hidden from alice", nostr.Tag{"h", chanB}))
	for i := range total {
		ev := signedAt(t, alice, 9, nostr.Now()-nostr.Timestamp(i/7), fmt.Sprint("message ", i), nostr.Tag{"h", chanA})
		mustPublish(t, ca, ev)
	}
	for _, tc := range []struct {
		name string
		k    testKey
		c    *nostr.Relay
		f    nostr.Filter
		want int64
	}{
		{"owner, counter", owner, co, nostr.Filter{Kinds: []int{9}}, total + 1},
		{"member, private hidden", alice, ca, nostr.Filter{Kinds: []int{9}}, total},
		// and alice's 9007 and the relay's 44100 naming her; not the
		// channel's 39000/39002, whose d tag holds the same value
		{"tag filter", alice, ca, nostr.Filter{Tags: nostr.TagMap{"h": {chanA}}}, total + 2},
	} {
		n, _, err := tc.c.Count(testCtx(t), nostr.Filters{tc.f})
		if err != nil {
			t.Fatalf("%s: COUNT: %v", tc.name, err)
		}
		status, body := post(t, tc.k, b.http()+"/count", "", jsonOf(t, []nostr.Filter{tc.f}))
		var res struct{ Count int64 }
		json.Unmarshal([]byte(body), &res)
		t.Logf("%s: COUNT %d, /count %d %s", tc.name, n, res.Count, body)
		if n != tc.want || status != 200 || res.Count != tc.want {
			t.Errorf("%s: COUNT = %d, /count = %d %s; want %d", tc.name, n, res.Count, body, tc.want)
		}
	}
	status, body := post(t, alice, b.http()+"/count", "", jsonOf(t, []nostr.Filter{{Kinds: []int{9}}, {Kinds: []int{9}, Authors: []string{alice.pk}}}))
	if status != 200 || !strings.Contains(body, fmt.Sprintf(`"count":%d`, total)) {
		t.Errorf("/count of two overlapping filters = %d %s; want %d", status, body, total)
	}
}

// TestAttackPrivateChannelsPastStorePageReadable: the channel state is
// rebuilt at start from the relay's own events; read with one plain
// query, the store's page of 250 left every channel past the first 125
// unknown after a restart, and their messages readable by any member.
func TestAttackPrivateChannelsPastStorePageReadable(t *testing.T) {
	const n = 140
	alice, mallory := newKey(t), newKey(t)
	dir := t.TempDir()
	args := []string{"--owner", alice.pk, "--allow", mallory.pk}
	b := runBinary(t, dir, args...)
	ca := login(t, b.url, alice)
	for i := range n {
		h := nostr.Tag{"h", fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)}
		mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
		mustPublish(t, ca, signed(t, alice, 9, fmt.Sprint("secret ", i), h))
	}
	b.stop(t)
	b = runBinary(t, dir, args...)
	cm := login(t, b.url, mallory)
	if evs, _ := query(t, cm, nostr.Filter{Kinds: []int{9, workspace.KindCreateGroup}, Limit: 1000}); len(evs) != 0 {
		t.Errorf("after a restart an outsider read %d events of private channels", len(evs))
	}
	ca = login(t, b.url, alice)
	if evs, _ := query(t, ca, nostr.Filter{Kinds: []int{9}, Limit: 1000}); len(evs) != n {
		t.Errorf("the channels' owner reads %d messages; want %d", len(evs), n)
	}
}
