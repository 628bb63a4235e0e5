package relay

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"

	"github.com/blevesearch/bleve/v2"
	"github.com/nbd-wtf/go-nostr"
)

// searchAll asks the built relay for a search four ways (REQ, COUNT,
// POST /query, POST /count) as k and returns the REQ's events, failing t
// if the four disagree.
func searchFour(t *testing.T, b *binRelay, k testKey, f nostr.Filter) []*nostr.Event {
	t.Helper()
	c := login(t, b.url, k)
	defer c.Close()
	evs, reason := query(t, c, f)
	if reason != "" {
		t.Fatalf("search %q as %s closed: %s", f.Search, k.pk[:8], reason)
	}
	bridged := bridgeEvents(t, k, b.http(), f)
	n, m := countBoth(t, k, c, b.http(), f)
	if len(bridged) != len(evs) || n != int64(len(evs)) || m != int64(len(evs)) {
		t.Errorf("search %q as %s: REQ %d, /query %d, COUNT %d, /count %d", f.Search, k.pk[:8], len(evs), len(bridged), n, m)
	}
	return evs
}

func contents(evs []*nostr.Event) string {
	var s []string
	for _, ev := range evs {
		s = append(s, ev.Content)
	}
	return strings.Join(s, " | ")
}

// TestAttackSearchLeaks: a full-text search must return what each reader
// may see and nothing else, as events or counts: a non-member of a
// private channel, a member removed from it, a banned key and everyone
// after a channel's deletion find none of its messages; a NIP-09
// deletion takes a message out of search.
func TestAttackSearchLeaks(t *testing.T) { searchLeaks(t) }

// TestAttackSearchLeaksPostgres is TestAttackSearchLeaks on PostgreSQL
// full text (--db).
func TestAttackSearchLeaksPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	searchLeaks(t, "--db", startPostgres(t))
}

func searchLeaks(t *testing.T, extra ...string) {
	alice, bob, mallory, carol, dave := newKey(t), newKey(t), newKey(t), newKey(t), newKey(t)
	dir := t.TempDir()
	b := runBinary(t, dir, append(slices.Clip(extra), "--owner", alice.pk, "--allow", strings.Join([]string{bob.pk, mallory.pk, carol.pk, dave.pk}, ","))...)
	ca, cb := login(t, b.url, alice), login(t, b.url, bob)
	priv, pub, doomed := nostr.Tag{"h", chanA}, nostr.Tag{"h", chanB}, nostr.Tag{"h", chanC}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", priv, nostr.Tag{"name", "secret"}, nostr.Tag{"visibility", "private"}))
	for _, k := range []testKey{bob, carol, dave} {
		mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", priv, nostr.Tag{"p", k.pk}))
	}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", pub, nostr.Tag{"name", "general"}, nostr.Tag{"visibility", "public"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", doomed, nostr.Tag{"name", "doomed"}, nostr.Tag{"visibility", "public"}))

	secret := signed(t, bob, 9, "the zebra launch is on friday", priv)
	mustPublish(t, cb, secret)
	public := signed(t, alice, 9, "zebra stripes for everyone", pub)
	mustPublish(t, ca, public)
	gone := signed(t, alice, 9, "zebra crossing, soon deleted", pub)
	mustPublish(t, ca, gone)
	inDoomed := signed(t, alice, 9, "zebra in a doomed channel", doomed)
	mustPublish(t, ca, inDoomed)

	zebra := nostr.Filter{Kinds: []int{9}, Search: "zebra"}
	if got := searchFour(t, b, bob, zebra); len(got) != 4 {
		t.Fatalf("member finds %d zebras (%s); want 4", len(got), contents(got))
	}

	// Carol leaves the private channel by force, dave the relay, the
	// doomed channel is deleted, one public message too.
	mustPublish(t, ca, signed(t, alice, workspace.KindRemoveUser, "", priv, nostr.Tag{"p", carol.pk}))
	if st, rep := manage(t, b.http(), alice, "banpubkey", dave.pk, "gone"); st != 200 || rep.Error != "" {
		t.Fatalf("banpubkey = %d %+v", st, rep)
	}
	mustPublish(t, ca, signed(t, alice, workspace.KindDeleteGroup, "", doomed))
	mustPublish(t, ca, signed(t, alice, workspace.KindDeletion, "", nostr.Tag{"e", gone.ID}, pub))

	check := func(b *binRelay) {
		t.Helper()
		for _, tc := range []struct {
			who  testKey
			name string
			want []string
		}{
			{alice, "owner", []string{secret.ID, public.ID}},
			{bob, "member", []string{secret.ID, public.ID}},
			{mallory, "non-member", []string{public.ID}},
			{carol, "removed member", []string{public.ID}},
		} {
			got := searchFour(t, b, tc.who, zebra)
			if len(got) != len(tc.want) {
				t.Errorf("%s finds %q; want %d results", tc.name, contents(got), len(tc.want))
				continue
			}
			for _, id := range tc.want {
				if !hasID(deref(got), id) {
					t.Errorf("%s misses %s in %q", tc.name, id[:8], contents(got))
				}
			}
		}
		// Naming the channel does not help an outsider.
		for _, f := range []nostr.Filter{
			{Kinds: []int{9}, Search: "zebra in:#secret"},
			{Kinds: []int{9}, Search: "friday"},
			{Kinds: []int{9}, Search: "zebra in:" + chanA},
		} {
			if got := bridgeEvents(t, mallory, b.http(), f); len(got) != 0 {
				t.Errorf("non-member's %q finds %d", f.Search, len(got))
			}
			c := login(t, b.url, mallory)
			if n, _, _ := c.Count(testCtx(t), nostr.Filters{f}); n != 0 {
				t.Errorf("non-member's COUNT %q = %d", f.Search, n)
			}
			c.Close()
		}
		// A banned key gets nothing at all.
		st, body := post(t, dave, b.http()+"/query", "", jsonOf(t, []nostr.Filter{zebra}))
		if st == 200 && strings.Contains(body, "zebra") {
			t.Errorf("banned key's search = %d %s", st, body)
		}
	}
	check(b)
	b.stop(t)
	b = runBinary(t, dir, append(slices.Clip(extra), "--owner", alice.pk, "--allow", strings.Join([]string{bob.pk, mallory.pk, carol.pk, dave.pk}, ","))...)
	check(b)
}

func deref(evs []*nostr.Event) []nostr.Event {
	out := make([]nostr.Event, len(evs))
	for i, ev := range evs {
		out[i] = *ev
	}
	return out
}

// TestSearchSyntax runs the query language against the built relay:
// words, phrases, from:, in:, has:file, before:/after:, relevance before
// recency, and a live subscription.
func TestSearchSyntax(t *testing.T) { searchSyntax(t) }

// TestSearchSyntaxPostgres is TestSearchSyntax on PostgreSQL full text.
func TestSearchSyntaxPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	searchSyntax(t, "--db", startPostgres(t))
}

func searchSyntax(t *testing.T, extra ...string) {
	alice, bob := newKey(t), newKey(t)
	dir := t.TempDir()
	b := runBinary(t, dir, append(extra, "--owner", alice.pk, "--allow", bob.pk)...)
	ca, cb := login(t, b.url, alice), login(t, b.url, bob)
	pub, other := nostr.Tag{"h", chanA}, nostr.Tag{"h", chanB}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", pub, nostr.Tag{"name", "general"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", other, nostr.Tag{"name", "random"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", pub, nostr.Tag{"p", bob.pk}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", other, nostr.Tag{"p", bob.pk}))
	mustPublish(t, cb, signed(t, bob, workspace.KindProfile, `{"name":"bobby","display_name":"Bob B"}`))
	day := func(s string) nostr.Timestamp {
		d, _ := time.Parse(time.DateOnly, s)
		return nostr.Timestamp(d.Unix() + 3600)
	}
	now := nostr.Now()
	msgs := map[string]nostr.Event{
		"a": signedAt(t, alice, 9, now-10, "the release notes are ready", pub),
		"b": signedAt(t, bob, 9, now-9, "notes about the release of the car", other),
		"c": signedAt(t, bob, 9, now-8, "screenshot of the release", pub, nostr.Tag{"imeta", "url http://x/1", "m image/png"}),
		"d": signedAt(t, alice, 9, day("2026-01-10"), "old release plan", pub),
		"e": signedAt(t, alice, 9, now-7, "release release release, the release!", pub),
	}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		ev := msgs[k]
		c := ca
		if ev.PubKey == bob.pk {
			c = cb
		}
		mustPublish(t, c, ev)
	}
	names := func(evs []*nostr.Event) string {
		var s []string
		for _, ev := range evs {
			for k, m := range msgs {
				if m.ID == ev.ID {
					s = append(s, k)
				}
			}
		}
		return strings.Join(s, "")
	}
	for _, tc := range []struct{ q, want string }{
		{`"release notes"`, "a"},
		{`"notes release"`, ""},            // the words, not in that order
		{`"release the release"`, "e"},     // across punctuation
		{`"notes about the release"`, "b"}, // stop words count in a phrase
		{`"NOTES   ABOUT"`, "b"},
		{`release notes`, "ab"},
		{`release from:@bobby`, "bc"},
		{`release from:"Bob B"`, ""}, // a quoted name is a phrase, not a name
		{`release from:` + bob.pk, "bc"},
		{`release in:#random`, "b"},
		{`release has:file`, "c"},
		{`release before:2026-02-01`, "d"},
		{`plan after:2026-01-10`, ""},
		{`plan after:2026-01-09`, "d"},
	} {
		evs := searchFour(t, b, alice, nostr.Filter{Kinds: []int{9}, Search: tc.q})
		got := []rune(names(evs))
		// compare as sets
		if len(got) != len(tc.want) || strings.Trim(tc.want, string(got)) != "" {
			t.Errorf("search %q = %q; want %q", tc.q, string(got), tc.want)
		}
	}
	// A date filter is exact to the second, though the index knows days.
	d := msgs["d"]
	for _, f := range []nostr.Filter{
		{Kinds: []int{9}, Search: "plan", Since: tsPtr(d.CreatedAt + 1)},
		{Kinds: []int{9}, Search: "plan", Until: tsPtr(d.CreatedAt - 1)},
	} {
		if evs := searchFour(t, b, alice, f); len(evs) != 0 {
			t.Errorf("search %+v found %d; want none", f, len(evs))
		}
	}
	if evs := searchFour(t, b, alice, nostr.Filter{Kinds: []int{9}, Search: "plan", Since: tsPtr(d.CreatedAt), Until: tsPtr(d.CreatedAt)}); len(evs) != 1 {
		t.Errorf("search plan at its second found %d; want 1", len(evs))
	}
	// Relevance first: "e" says release five times.
	evs := searchFour(t, b, alice, nostr.Filter{Kinds: []int{9}, Search: "release"})
	if got := names(evs); len(got) != 5 || got[0] != 'e' {
		t.Errorf("search release ranked %q; want e first of five", got)
	}
	c := login(t, b.url, alice)
	// Live: a search subscription gets new matches only.
	sub, err := c.Subscribe(testCtx(t), nostr.Filters{{Kinds: []int{9}, Search: "giraffe"}})
	if err != nil {
		t.Fatal(err)
	}
	<-sub.EndOfStoredEvents
	mustPublish(t, ca, signed(t, alice, 9, "no match here", pub))
	hit := signed(t, alice, 9, "a giraffe appears", pub)
	mustPublish(t, ca, hit)
	select {
	case ev := <-sub.Events:
		if ev.ID != hit.ID {
			t.Errorf("live search delivered %q", ev.Content)
		}
	case <-time.After(5 * time.Second):
		t.Error("live search delivered nothing")
	}
}

// TestSearchIndexSurvivesKill: the index is kept beside the store; after
// a kill -9 right after a burst, the restarted relay finds every message
// it acknowledged, and a removed index is rebuilt from the store.
func TestSearchIndexSurvivesKill(t *testing.T) {
	alice := newKey(t)
	dir := t.TempDir()
	args := []string{"--owner", alice.pk}
	b := runBinary(t, dir, args...)
	ca := login(t, b.url, alice)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h))
	const n = 300
	for i := range n {
		mustPublish(t, ca, signed(t, alice, 9, fmt.Sprintf("okapi number %d", i), h))
	}
	b.cmd.Process.Kill()
	b.cmd.Wait()
	f := nostr.Filter{Kinds: []int{9}, Search: "okapi", Limit: 1000}
	b = runBinary(t, dir, args...)
	if got := searchFour(t, b, alice, f); len(got) != n {
		t.Errorf("after kill -9: %d of %d messages found", len(got), n)
	}
	b.stop(t)
	if err := os.RemoveAll(filepath.Join(dir, "search")); err != nil {
		t.Fatal(err)
	}
	b = runBinary(t, dir, args...)
	if got := searchFour(t, b, alice, f); len(got) != n {
		t.Errorf("rebuilt index: %d of %d messages found", len(got), n)
	}
	// An index of an older document shape is rebuilt too.
	b.stop(t)
	if err := os.RemoveAll(filepath.Join(dir, "search")); err != nil {
		t.Fatal(err)
	}
	old, err := bleve.New(filepath.Join(dir, "search"), bleve.NewIndexMapping())
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	b = runBinary(t, dir, args...)
	if got := searchFour(t, b, alice, f); len(got) != n {
		t.Errorf("index of an older shape: %d of %d messages found", len(got), n)
	}
}

func tsPtr(t nostr.Timestamp) *nostr.Timestamp { return &t }

// TestAttackSearchPRComments: pull requests' comments and reviews are
// searched like messages, and a private channel's repository's comments
// never reach a non-member: not through search (events or counts), nor a
// comment crafted without the channel's h tag, nor by id.
func TestAttackSearchPRComments(t *testing.T) { searchPRComments(t) }

// TestAttackSearchPRCommentsPostgres is TestAttackSearchPRComments on
// PostgreSQL full text.
func TestAttackSearchPRCommentsPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	searchPRComments(t, "--db", startPostgres(t))
}

func searchPRComments(t *testing.T, extra ...string) {
	needGit(t)
	alice, bob, bot, carol := newKey(t), newKey(t), newKey(t), newKey(t)
	args := append(slices.Clip(extra), "--owner", alice.pk, "--allow", strings.Join([]string{bob.pk, bot.pk, carol.pk}, ","))
	if len(extra) > 0 {
		args = append(args, "--git-dir", t.TempDir())
	}
	b := runBinary(t, t.TempDir(), args...)
	w := &prWorld{t: t, b: b, buzz: testexe.Link(t, "buzz"), env: gitEnv(t),
		repoURL: b.http() + "/git/" + alice.pk + "/proj.git", repo: alice.pk + "/proj"}
	work := t.TempDir()
	gitOK(t, w.env, work, "init", "--quiet", "-b", "main")
	commitFile(t, w.env, work, "README", "line one\n", "first")
	w.push(alice, work, "main")
	ca := login(t, b.url, alice)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", bot.pk, "", "bot"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindRepoAnnouncement, "", nostr.Tag{"d", "proj"}, nostr.Tag{workspace.TagRepoChannel, chanA}))
	bw := w.clone(bot)
	gitOK(t, w.env, bw, "checkout", "--quiet", "-b", "fix")
	commitFile(t, w.env, bw, "FIX", "fixed\n", "fix it")
	w.push(bot, bw, "fix")
	id := w.create(bot, "fix", "Fix it")
	w.must(bob, "", "pr", "comment", "--pr", id, "--body", "the wombat regression is back")
	w.must(bob, "", "pr", "review", "--pr", id, "--request-changes", "--body", "wombat tests first")
	// The owner's repository shared with no channel: only she reads it,
	// and her pull request's comments carry no h tag.
	solo := &prWorld{t: t, b: b, buzz: w.buzz, env: w.env,
		repoURL: b.http() + "/git/" + alice.pk + "/solo.git", repo: alice.pk + "/solo"}
	solo.push(alice, work, "main")
	gitOK(t, w.env, work, "checkout", "--quiet", "-b", "mine")
	commitFile(t, w.env, work, "MINE", "mine\n", "mine")
	solo.push(alice, work, "mine")
	soloPR := solo.create(alice, "mine", "Mine")
	solo.must(alice, "", "pr", "comment", "--pr", soloPR, "--body", "wombat plans, owner only")
	var bare struct {
		ID string `json:"id"`
	}
	evs, _ := query(t, login(t, b.url, alice), nostr.Filter{Kinds: []int{workspace.KindComment}, Tags: nostr.TagMap{"E": {soloPR}}})
	if len(evs) != 1 || evs[0].Tags.Find("h") != nil {
		t.Fatalf("owner's comments on her own pull request: %d", len(evs))
	}
	bare.ID = evs[0].ID
	if got := searchFour(t, b, alice, nostr.Filter{Search: "wombat"}); len(got) != 3 {
		t.Errorf("owner finds %d (%s); want 3", len(got), contents(got))
	}

	for _, f := range []nostr.Filter{{Search: "wombat"}, {Kinds: []int{workspace.KindComment}, Search: "wombat"}} {
		if got := searchFour(t, b, bob, f); len(got) != 2 {
			t.Errorf("member's %+v finds %d (%s); want 2", f, len(got), contents(got))
		}
		if got := searchFour(t, b, carol, f); len(got) != 0 {
			t.Errorf("non-member's %+v finds %q; want none", f, contents(got))
		}
	}
	if got := searchFour(t, b, bob, nostr.Filter{Search: `"wombat regression"`}); len(got) != 1 {
		t.Errorf("member's phrase finds %d; want 1", len(got))
	}
	for _, k := range []testKey{bob, carol} {
		c := login(t, b.url, k)
		if evs, _ := query(t, c, nostr.Filter{IDs: []string{bare.ID}}); len(evs) != 0 {
			t.Errorf("%s read the owner's repository's pull request comment by id", k.pk[:8])
		}
		all, _ := query(t, c, nostr.Filter{Kinds: []int{workspace.KindComment}})
		for _, ev := range all {
			if ev.ID == bare.ID {
				t.Errorf("%s read the owner's repository's pull request comment by kind", k.pk[:8])
			}
		}
	}
}
