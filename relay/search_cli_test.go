package relay

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// TestBuzzSearchAndInbox runs the built `buzz` against the built relay:
// `buzz messages search` uses the relay's full-text syntax (a phrase,
// from:) and finds only what its caller may read; `buzz inbox` lists a
// mention and a direct message unread, and --unread drops what the
// caller's read marker covers.
func TestBuzzSearchAndInbox(t *testing.T) {
	alice, bob, mallory := newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", bob.pk+","+mallory.pk)
	buzz := testexe.Link(t, "buzz")
	run := func(k testKey, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(testCtx(t), buzz, args...)
		cmd.Env = []string{"BUZZ_RELAY_URL=" + b.http(), "BUZZ_PRIVATE_KEY=" + k.sk}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("buzz %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		return out.String()
	}
	ca, cb := login(t, b.url, alice), login(t, b.url, bob)
	pub, dm := nostr.Tag{"h", chanA}, nostr.Tag{"h", chanB}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", pub, nostr.Tag{"name", "general"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", pub, nostr.Tag{"p", bob.pk}))
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", dm, nostr.Tag{"name", "dm"}, nostr.Tag{workspace.TagChannelType, workspace.ChannelTypeDM}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", dm, nostr.Tag{"p", bob.pk}))
	mention := signed(t, alice, workspace.KindStream, "bob, the heron report please", pub, nostr.Tag{"p", bob.pk})
	mustPublish(t, ca, mention)
	private := signed(t, alice, workspace.KindStream, "heron budget, between us", dm)
	mustPublish(t, ca, private)
	mustPublish(t, cb, signed(t, bob, workspace.KindStream, "a heron flew by", pub))

	count := func(out string) int {
		var evs []map[string]any
		if err := json.Unmarshal([]byte(out), &evs); err != nil {
			t.Fatalf("not JSON: %s", out)
		}
		return len(evs)
	}
	if n := count(run(bob, "messages", "search", "--query", "heron")); n != 3 {
		t.Errorf("bob's search heron = %d; want 3", n)
	}
	if n := count(run(mallory, "messages", "search", "--query", "heron")); n != 2 {
		t.Errorf("mallory's search heron = %d; want 2 (not the DM)", n)
	}
	if n := count(run(bob, "messages", "search", "--query", `"heron report" from:`+alice.pk)); n != 1 {
		t.Errorf("phrase from alice = %d; want 1", n)
	}

	var items []inboxLine
	json.Unmarshal([]byte(run(bob, "inbox")), &items)
	why := map[string]string{}
	for _, it := range items {
		if it.Unread {
			why[it.ID] = it.Why
		}
	}
	if len(items) != 2 || why[private.ID] != "dm" || why[mention.ID] != "mention" {
		t.Fatalf("bob's inbox = %+v; want the DM and the mention, unread", items)
	}
	// Bob reads the DM (his read marker, as the web client writes it).
	mustPublish(t, cb, signed(t, bob, workspace.KindAppData, `{"t":`+jsonNum(private.CreatedAt)+`,"ids":[]}`, nostr.Tag{"d", workspace.ReadMarkerPrefix + chanB}))
	json.Unmarshal([]byte(run(bob, "inbox", "--unread")), &items)
	if len(items) != 1 || items[0].ID != mention.ID {
		t.Errorf("bob's unread inbox = %+v; want the mention only", items)
	}
}

type inboxLine struct {
	Why     string `json:"why"`
	Unread  bool   `json:"unread"`
	Channel string `json:"channel"`
	ID      string `json:"id"`
	Content string `json:"content"`
}

func jsonNum(ts nostr.Timestamp) string { b, _ := json.Marshal(ts); return string(b) }

// TestBuzzInboxReviews: a pull request opened with --reviewer lands in the
// named reviewer's `buzz inbox` (why "review", unread) and in the
// repository owner's, not in another member's; a review takes it out of
// the reviewer's, closing the pull request out of the owner's.
func TestBuzzInboxReviews(t *testing.T) {
	needGit(t)
	alice, bob, bot, carol := newKey(t), newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", strings.Join([]string{bob.pk, bot.pk, carol.pk}, ","))
	w := newPRWorld(t, b, login(t, b.url, alice), alice, "one\n", []testKey{bob, bot, carol}, nil)
	bw := w.clone(bot)
	gitOK(t, w.env, bw, "checkout", "--quiet", "-b", "fix")
	commitFile(t, w.env, bw, "FIX", "fixed\n", "fix it")
	w.push(bot, bw, "fix")
	var res struct {
		ID string `json:"id"`
	}
	json.Unmarshal([]byte(w.must(bot, "", "pr", "create", "--repo", w.repo, "--head", "fix", "--title", "Fix the thing", "--reviewer", bob.pk)), &res)
	if !nostr.IsValid32ByteHex(res.ID) {
		t.Fatalf("pr create gave id %q", res.ID)
	}
	reviews := func(k testKey) []inboxLine {
		t.Helper()
		var items []inboxLine
		if err := json.Unmarshal([]byte(w.must(k, "", "inbox")), &items); err != nil {
			t.Fatal(err)
		}
		var out []inboxLine
		for _, i := range items {
			if i.Why == "review" {
				out = append(out, i)
			}
		}
		return out
	}
	for _, k := range []testKey{bob, alice} {
		got := reviews(k)
		if len(got) != 1 || got[0].ID != res.ID || !got[0].Unread || got[0].Content != "Fix the thing" || got[0].Channel != chanA {
			t.Errorf("%s's review requests = %+v; want the pull request, unread", k.pk[:8], got)
		}
	}
	for _, k := range []testKey{carol, bot} {
		if got := reviews(k); len(got) != 0 {
			t.Errorf("%s's review requests = %+v; want none", k.pk[:8], got)
		}
	}
	// Asked later (buzz pr request-review), carol has it too.
	w.must(bot, "", "pr", "request-review", "--pr", res.ID, "--reviewer", carol.pk)
	if got := reviews(carol); len(got) != 1 || got[0].ID != res.ID {
		t.Errorf("after a request for her review, carol's review requests = %+v; want the pull request", got)
	}
	w.must(bob, "", "pr", "review", "--pr", res.ID, "--approve")
	if got := reviews(bob); len(got) != 0 {
		t.Errorf("after reviewing, bob's review requests = %+v", got)
	}
	if got := reviews(alice); len(got) != 1 {
		t.Errorf("after bob's review, alice's review requests = %+v; want still one", got)
	}
	w.must(bot, "", "pr", "close", "--pr", res.ID)
	if got := reviews(alice); len(got) != 0 {
		t.Errorf("after closing, alice's review requests = %+v", got)
	}
}
