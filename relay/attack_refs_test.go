package relay

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/dgraph-io/badger/v4"
	eventbadger "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"
)

// storeDirectly writes evs into a stopped relay's badger store as a
// relay of an earlier version would have kept them.
func storeDirectly(t *testing.T, dir string, evs ...*nostr.Event) {
	t.Helper()
	store := &badgerStore{&eventbadger.BadgerBackend{
		Path: filepath.Join(dir, "events"), MaxLimit: maxQueryLimit,
		BadgerOptionsModifier: func(o badger.Options) badger.Options { return o.WithLogger(nil) },
	}}
	if err := store.Init(); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, ev := range evs {
		if err := store.SaveEvent(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
}

// countBoth counts f over the websocket (NIP-45) and POST /count.
func countBoth(t *testing.T, k testKey, c *nostr.Relay, base string, f nostr.Filter) (int64, int64) {
	t.Helper()
	n, _, err := c.Count(testCtx(t), nostr.Filters{f})
	if err != nil {
		t.Fatalf("COUNT %v: %v", f, err)
	}
	status, body := post(t, k, base+"/count", "", jsonOf(t, []nostr.Filter{f}))
	var res struct{ Count int64 }
	if err := json.Unmarshal([]byte(body), &res); status != 200 || err != nil {
		t.Fatalf("POST /count = %d %s", status, body)
	}
	return n, res.Count
}

// TestAttackReferencesToPrivateMessagesLeak: reactions, deletions,
// replies and quotes of a private channel's message, made without the
// channel's h tag, were served to every relay member, stored and live,
// and counted for them: the message id, who reacted, with what, when.
// Such events are refused now; ones stored before are hidden from
// outsiders of the channel, in REQ, the bridge, COUNT and /count.
func TestAttackReferencesToPrivateMessagesLeak(t *testing.T) {
	alice, bob, mallory := newKey(t), newKey(t), newKey(t)
	dir := t.TempDir()
	args := []string{"--owner", alice.pk, "--allow", bob.pk + "," + mallory.pk}
	b := runBinary(t, dir, args...)
	ca, cb := login(t, b.url, alice), login(t, b.url, bob)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk}))
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", nostr.Tag{"h", chanB}, nostr.Tag{"visibility", "public"}))
	secret := signed(t, bob, 9, "the launch date", h)
	mustPublish(t, cb, secret)
	b.stop(t)

	// What a relay before the rule stored: a reaction, a reply, a quote
	// and a deletion of the reaction, none with an h tag.
	eTag, qTag := nostr.Tag{"e", secret.ID}, nostr.Tag{"q", secret.ID}
	legacyReaction := signed(t, alice, workspace.KindReaction, "👀", eTag)
	legacyReply := signed(t, alice, 1, "noted", eTag)
	legacyQuote := signed(t, alice, 1, "see this", qTag)
	legacyUndo := signed(t, alice, workspace.KindDeletion, "", nostr.Tag{"e", legacyReaction.ID})
	storeDirectly(t, dir, &legacyReaction, &legacyReply, &legacyQuote, &legacyUndo)
	legacy := []nostr.Event{legacyReaction, legacyReply, legacyQuote, legacyUndo}

	b = runBinary(t, dir, args...)
	ca, cb, cm := login(t, b.url, alice), login(t, b.url, bob), login(t, b.url, mallory)

	liveCtx := testCtx(t)
	live, err := cm.Subscribe(liveCtx, nostr.Filters{{Kinds: []int{1, 5, 7, 9, workspace.KindEdit}}})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Unsub()
	<-live.EndOfStoredEvents
	liveIDs := make(chan string, 100)
	go func() {
		for ev := range live.Events {
			liveIDs <- ev.ID
		}
		close(liveIDs)
	}()

	// Without the channel's h tag, or with another channel's, refused.
	for _, ev := range []nostr.Event{
		signed(t, alice, workspace.KindReaction, "🔥", eTag),
		signed(t, alice, workspace.KindReaction, "🔥", eTag, nostr.Tag{"h", chanB}),
		signed(t, alice, 1, "reply", eTag),
		signed(t, alice, 1, "quote", qTag),
		signed(t, alice, workspace.KindEdit, "edit", eTag),
		signed(t, bob, workspace.KindDeletion, "", eTag),
		signed(t, alice, workspace.KindDeletion, "", nostr.Tag{"e", legacyReaction.ID}),
	} {
		if msg := refused(t, ca, ev); !strings.Contains(msg, `invalid: this event refers to an event of channel `+chanA+` and needs its tag ["h", "`+chanA+`"]`) &&
			!(ev.PubKey == bob.pk && strings.Contains(msg, "needs its tag")) {
			t.Errorf("kind %d %v refused with %q", ev.Kind, ev.Tags, msg)
		}
	}
	open := signed(t, alice, 9, "in the open channel", nostr.Tag{"h", chanB})
	mustPublish(t, ca, open)
	if msg := refused(t, ca, signed(t, alice, workspace.KindDeletion, "", eTag, nostr.Tag{"e", open.ID}, h)); !strings.Contains(msg, "invalid: an event may refer to events of one channel only") {
		t.Errorf("a deletion across two channels refused with %q", msg)
	}
	// An outsider is not told which channel, also next to one it reads.
	if msg := refused(t, cm, signed(t, mallory, workspace.KindReaction, "+", nostr.Tag{"e", open.ID}, eTag, nostr.Tag{"h", chanB})); !strings.HasSuffix(msg, "restricted: not a channel member") {
		t.Errorf("outsider's reaction to both channels refused with %q", msg)
	}
	if msg := refused(t, cm, signed(t, mallory, workspace.KindReaction, "+", eTag)); msg != "msg: restricted: not a channel member" && !strings.HasSuffix(msg, "restricted: not a channel member") {
		t.Errorf("outsider's reaction refused with %q", msg)
	}
	// With it, stored and read as the channel's.
	tagged := signed(t, alice, workspace.KindReaction, "👍", eTag, h)
	mustPublish(t, ca, tagged)
	reply := signed(t, bob, 9, "a reply", eTag, h)
	mustPublish(t, cb, reply)
	undo := signed(t, alice, workspace.KindDeletion, "", nostr.Tag{"e", tagged.ID}, h)
	mustPublish(t, ca, undo)
	canary := signed(t, alice, 1, "public")
	mustPublish(t, ca, canary)

	hidden := append(legacy, reply, undo, tagged)
	for _, f := range []nostr.Filter{
		{Kinds: []int{1, 5, 7, 9}},
		{Tags: nostr.TagMap{"e": {secret.ID}}},
		{Tags: nostr.TagMap{"q": {secret.ID}}},
		{Tags: nostr.TagMap{"e": {legacyReaction.ID, tagged.ID}}},
		{IDs: []string{legacyReaction.ID, legacyReply.ID, legacyQuote.ID, legacyUndo.ID, reply.ID, undo.ID}},
	} {
		evs, _ := query(t, cm, f)
		bevs := bridgeEvents(t, mallory, b.http(), f)
		for _, ev := range hidden {
			if strings.Contains(ids(evs), ev.ID[:8]) {
				t.Errorf("REQ %v: outsider read kind %d %q", f, ev.Kind, ev.Content)
			}
			if hasID(bevs, ev.ID) {
				t.Errorf("POST /query %v: outsider read kind %d %q", f, ev.Kind, ev.Content)
			}
		}
	}
	for _, f := range []nostr.Filter{
		{Kinds: []int{workspace.KindReaction}, Tags: nostr.TagMap{"e": {secret.ID}}},
		{Tags: nostr.TagMap{"q": {secret.ID}}},
		{Kinds: []int{workspace.KindDeletion}},
	} {
		if ws, br := countBoth(t, mallory, cm, b.http(), f); ws != 0 || br != 0 {
			t.Errorf("outsider's COUNT %v = %d, /count = %d; want 0", f, ws, br)
		}
	}
	// Members still read and count them all.
	if evs, _ := query(t, cb, nostr.Filter{Tags: nostr.TagMap{"e": {secret.ID}}}); len(evs) != 3 {
		t.Errorf("member read %d of the 3 events still referring to the message: %s", len(evs), ids(evs))
	}
	if ws, br := countBoth(t, bob, cb, b.http(), nostr.Filter{Kinds: []int{workspace.KindReaction}, Tags: nostr.TagMap{"e": {secret.ID}}}); ws != 1 || br != 1 {
		t.Errorf("member's reaction COUNT = %d, /count = %d; want 1 (the legacy one; the tagged one is deleted)", ws, br)
	}

	// Live: the outsider got the public note and nothing of the channel.
	got := map[string]bool{}
	deadline := time.After(5 * time.Second)
	for !got[canary.ID] {
		select {
		case id, ok := <-liveIDs:
			if !ok {
				t.Fatal("the outsider's live subscription ended")
			}
			got[id] = true
		case <-deadline:
			t.Fatal("the outsider's live subscription never got the public note")
		}
	}
	for len(liveIDs) > 0 {
		got[<-liveIDs] = true
	}
	for _, ev := range hidden {
		if got[ev.ID] {
			t.Errorf("outsider got kind %d %q live", ev.Kind, ev.Content)
		}
	}
}

// gitService asks for a repository's refs for service (upload or
// receive pack) with a NIP-98 token by k and returns the status.
func gitService(t *testing.T, k testKey, repoURL, service string) int {
	t.Helper()
	code, _ := nip98Get(t, k, repoURL, repoURL+"/info/refs?service="+service, nip98.Options{})
	return code
}

// TestAttackRepoSharingSquatted: a 30617 could share a repository with a
// channel id nobody had created, and whoever created that id later owned
// the channel and so could push. Announcements naming a missing channel,
// or one their author does not administer, are refused; one stored before
// gives the channel's later creator nothing.
func TestAttackRepoSharingSquatted(t *testing.T) {
	needGit(t)
	root, alice, mallory := newKey(t), newKey(t), newKey(t)
	dir := t.TempDir()
	args := []string{"--owner", root.pk, "--allow", alice.pk + "," + mallory.pk}
	b := runBinary(t, dir, args...)
	env := gitEnv(t)
	repoURL := b.http() + "/git/" + alice.pk + "/proj.git"
	work := t.TempDir()
	gitOK(t, env, work, "init", "--quiet", "-b", "main")
	os.WriteFile(filepath.Join(work, "README"), []byte("hello\n"), 0o644)
	gitOK(t, env, work, "add", "README")
	gitOK(t, env, work, "commit", "--quiet", "-m", "first")
	gitOK(t, env, work, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "main")...)

	ca, cm := login(t, b.url, alice), login(t, b.url, mallory)
	share := func(ch string) nostr.Event {
		return signed(t, alice, workspace.KindRepoAnnouncement, "", nostr.Tag{"d", "proj"}, nostr.Tag{workspace.TagRepoChannel, ch})
	}
	if msg := refused(t, ca, share(chanB)); !strings.Contains(msg, "invalid: no channel "+chanB) {
		t.Errorf("sharing with a channel nobody made refused with %q", msg)
	}
	status, body := post(t, alice, b.http()+"/events", "", jsonOf(t, share(chanB)))
	if status != http.StatusBadRequest || !strings.Contains(body, "no channel") {
		t.Errorf("bridge: sharing with a channel nobody made = %d %s", status, body)
	}
	// mallory's own channel, which alice does not administer
	mustPublish(t, cm, signed(t, mallory, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"visibility", "private"}))
	mustPublish(t, cm, signed(t, mallory, workspace.KindAddUser, "", nostr.Tag{"h", chanA}, nostr.Tag{"p", alice.pk}))
	if msg := refused(t, ca, share(chanA)); !strings.Contains(msg, "restricted: only the channel's owner or admins") {
		t.Errorf("sharing with a channel alice does not administer refused with %q", msg)
	}
	b.stop(t)

	// An announcement of an earlier relay names chanB, still unmade.
	old := signedAt(t, alice, workspace.KindRepoAnnouncement, nostr.Now()-60, "", nostr.Tag{"d", "proj"}, nostr.Tag{workspace.TagRepoChannel, chanB})
	storeDirectly(t, dir, &old)
	b = runBinary(t, dir, args...)
	repoURL = b.http() + "/git/" + alice.pk + "/proj.git"
	cm = login(t, b.url, mallory)
	mustPublish(t, cm, signed(t, mallory, workspace.KindCreateGroup, "", nostr.Tag{"h", chanB}, nostr.Tag{"visibility", "private"}))
	mustPublish(t, cm, signed(t, mallory, workspace.KindAddUser, "", nostr.Tag{"h", chanB}, nostr.Tag{"p", alice.pk}, nostr.Tag{"role", "admin"}))
	for _, svc := range []string{"git-receive-pack", "git-upload-pack"} {
		if got := gitService(t, mallory, repoURL, svc); got != http.StatusNotFound {
			t.Errorf("%s by the squatter of the announced channel = %d; want 404", svc, got)
		}
	}
	dst := filepath.Join(t.TempDir(), "c")
	if out, err := gitRun(t, env, "", append(authed(t, mallory, repoURL), "clone", "--quiet", repoURL, dst)...); err == nil {
		t.Errorf("the squatter cloned the repository: %s", out)
	}
	if got := gitService(t, alice, repoURL, "git-receive-pack"); got != http.StatusOK {
		t.Errorf("the repository's owner gets %d for git-receive-pack; want 200", got)
	}
}

// TestAttackDeletionBeforeChecks: a NIP-09 deletion was applied before the
// event carrying it passed the write gate, so a deletion then refused
// (oversize, naming a channel its author may not write, dated ahead) had
// already deleted its targets; the bridge had a second path that ignored
// a tags. One path, after every check, for websocket and bridge.
func TestAttackDeletionBeforeChecks(t *testing.T) {
	alice, bob := newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", bob.pk, "--allow", alice.pk, "--max-event-bytes", "4096")
	ca, cb := login(t, b.url, alice), login(t, b.url, bob)
	mustPublish(t, cb, signed(t, bob, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"visibility", "private"}))
	note := signed(t, alice, 1, "keep me")
	mustPublish(t, ca, note)
	profile := signed(t, alice, 30023, "an article", nostr.Tag{"d", "post"})
	mustPublish(t, ca, profile)
	addr := nostr.Tag{"a", "30023:" + alice.pk + ":post"}
	target := nostr.Tag{"e", note.ID}
	stillThere := func(how string, ev nostr.Event) {
		t.Helper()
		if evs, _ := query(t, ca, nostr.Filter{IDs: []string{ev.ID}}); len(evs) != 1 {
			t.Errorf("%s: kind %d deleted by a refused deletion", how, ev.Kind)
		}
	}
	for _, tc := range []struct {
		name string
		ev   nostr.Event
		want string
	}{
		{"oversize", signed(t, alice, workspace.KindDeletion, strings.Repeat("x", 5000), target, addr), "over the 4096 byte limit"},
		{"private channel she is not in", signed(t, alice, workspace.KindDeletion, "", target, addr, nostr.Tag{"h", chanA}), "restricted: not a channel member"},
		{"no such channel", signed(t, alice, workspace.KindDeletion, "", target, addr, nostr.Tag{"h", chanB}), "restricted: not a channel member"},
		{"dated ahead", signedAt(t, alice, workspace.KindDeletion, nostr.Now()+3600, "", target, addr), "--max-future"},
	} {
		if msg := refused(t, ca, tc.ev); !strings.Contains(msg, tc.want) {
			t.Errorf("websocket %s: refused with %q; want %q", tc.name, msg, tc.want)
		}
		stillThere("websocket "+tc.name, note)
		stillThere("websocket "+tc.name, profile)
		again := tc.ev
		again.CreatedAt = tc.ev.CreatedAt + 1
		again.Sign(alice.sk)
		if status, body := post(t, alice, b.http()+"/events", "", jsonOf(t, again)); status < 400 || !strings.Contains(body, tc.want) {
			t.Errorf("bridge %s: %d %s; want refused with %q", tc.name, status, body, tc.want)
		}
		stillThere("bridge "+tc.name, note)
		stillThere("bridge "+tc.name, profile)
	}
	// An agent whose attestation allows only kind 1 may not write kind 5.
	agent := newKey(t)
	grant := attest(t, alice, agent, "kind=1")
	cg := loginWith(t, b.url, agent, grant)
	agentNote := signed(t, agent, 1, "by the agent", grant)
	mustPublish(t, cg, agentNote)
	if msg := refused(t, cg, signed(t, agent, workspace.KindDeletion, "", nostr.Tag{"e", agentNote.ID}, grant)); !strings.Contains(msg, "kind 5") {
		t.Errorf("websocket: a kind 5 outside the attestation refused with %q", msg)
	}
	stillThere("websocket kind outside the attestation", agentNote)
	del := jsonOf(t, signed(t, agent, workspace.KindDeletion, "", nostr.Tag{"e", agentNote.ID}))
	if status, body := bridgeCall(t, agent, b.http()+"/events", "", nip98.Options{Body: del}, "", map[string]string{"x-auth-tag": string(jsonOf(t, grant))}, del); status < 400 {
		t.Errorf("bridge: a kind 5 outside the attestation = %d %s; want refused", status, body)
	}
	stillThere("bridge kind outside the attestation", agentNote)

	// One of the targets another's: nothing is deleted.
	bobs := signed(t, bob, 1, "bob's")
	mustPublish(t, cb, bobs)
	if msg := refused(t, ca, signed(t, alice, workspace.KindDeletion, "", target, nostr.Tag{"e", bobs.ID})); !strings.Contains(msg, "blocked: you are not the author of "+bobs.ID) {
		t.Errorf("deleting another's event refused with %q", msg)
	}
	stillThere("with another's target", note)

	// The bridge deletes by address as the websocket does.
	if status, body := post(t, alice, b.http()+"/events", "", jsonOf(t, signed(t, alice, workspace.KindDeletion, "", addr))); status != 200 {
		t.Fatalf("bridge deletion by address = %d %s", status, body)
	}
	if evs, _ := query(t, ca, nostr.Filter{IDs: []string{profile.ID}}); len(evs) != 0 {
		t.Errorf("a bridge deletion by address left the event")
	}
	mustPublish(t, ca, signed(t, alice, workspace.KindDeletion, "", target))
	if evs, _ := query(t, ca, nostr.Filter{IDs: []string{note.ID}}); len(evs) != 0 {
		t.Errorf("an accepted deletion left its target")
	}
}
