package cli

import (
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func TestMemRoundTrip(t *testing.T) {
	w := newWorkspace(t)
	owner := w.alice
	tag := attest(t, owner, w.me.pk)
	env := []string{"BUZZ_RELAY_URL=" + w.r.base, "BUZZ_PRIVATE_KEY=" + w.me.sk, "BUZZ_AUTH_TAG=" + tag}
	run := func(stdin string, args ...string) result { return runBuzzEnv(t, env, stdin, args...) }

	fails(t, run("", "mem", "get", "core"), 1, catNotFound)
	if res := run("", "mem", "set", "core", "I am the release bot."); res.code != 0 {
		t.Fatalf("mem set core: %d %s", res.code, res.stderr)
	}
	if res := run("line one\nline two\n", "mem", "set", "notes/today", "-"); res.code != 0 {
		t.Fatalf("mem set notes: %d %s", res.code, res.stderr)
	}
	fails(t, run("", "mem", "set", "notes/empty", "-"), 1, catUser)
	if res := run("", "mem", "get", "core"); res.code != 0 || res.stdout != "I am the release bot." {
		t.Fatalf("mem get core = %q (%d %s)", res.stdout, res.code, res.stderr)
	}
	if res := run("", "mem", "get", "mem/notes/today"); res.stdout != "line one\nline two\n" {
		t.Fatalf("mem get notes = %q", res.stdout)
	}
	sum := sha256.Sum256([]byte("line one\nline two\n"))
	if res := run("", "mem", "hash", "notes/today"); !strings.Contains(res.stdout, hex.EncodeToString(sum[:])) {
		t.Fatalf("mem hash = %q", res.stdout)
	}
	patch := "@@ -1,2 +1,2 @@\n line one\n-line two\n+line 2\n"
	fails(t, run(patch, "mem", "patch", "notes/today", "--base-hash", strings.Repeat("0", 64)), 5, catConflict)
	fails(t, run(patch, "mem", "patch", "notes/today"), 1, catUser)
	if res := run(patch, "mem", "patch", "notes/today", "--base-hash", hex.EncodeToString(sum[:])); res.code != 0 {
		t.Fatalf("mem patch: %d %s", res.code, res.stderr)
	}
	if res := run("", "mem", "get", "notes/today"); res.stdout != "line one\nline 2\n" {
		t.Fatalf("after patch = %q", res.stdout)
	}
	var ls []struct{ Slug string }
	if res := run("", "mem", "ls"); json.Unmarshal([]byte(res.stdout), &ls) != nil || len(ls) != 1 || ls[0].Slug != "mem/notes/today" {
		t.Fatalf("mem ls = %q", res.stdout)
	}
	// The owner reads the agent's memory with the same conversation key.
	res := runBuzzEnv(t, []string{"BUZZ_RELAY_URL=" + w.r.base, "BUZZ_PRIVATE_KEY=" + owner.sk}, "", "mem", "get", "core", "--agent", w.me.pk)
	if res.code != 0 || res.stdout != "I am the release bot." {
		t.Fatalf("owner read = %q (%d %s)", res.stdout, res.code, res.stderr)
	}
	if res := run("", "mem", "rm", "notes/today"); res.code != 0 {
		t.Fatalf("mem rm: %s", res.stderr)
	}
	fails(t, run("", "mem", "get", "notes/today"), 1, catNotFound)
	for _, ev := range w.r.all(t, nostr.Filter{Kinds: []int{workspace.KindEngram}}) {
		if strings.Contains(ev.Content, "release bot") || len(ev.Tags) != 3 || tagValue(ev, "p") != owner.pk {
			t.Fatalf("engram %v is not an encrypted d/p/auth event", ev)
		}
	}
	fails(t, runBuzz(t, w.r.base, w.me, "", "mem", "set", "core", "x"), 1, catUser) // no owner known
}

func TestExtendedCommands(t *testing.T) {
	w := newWorkspace(t)
	w.ok(t, nil, "# Plan\n- ship\n", "canvas", "set", "--channel", testChannel, "--content", "-")
	if res := w.run(t, "", "canvas", "get", "--channel", testChannel); res.stdout != "# Plan\n- ship\n\n" {
		t.Fatalf("canvas get = %q", res.stdout)
	}
	if res := w.run(t, "", "canvas", "get", "--channel", "11111111-2222-4333-8444-555555555555"); res.stdout != "null\n" {
		t.Fatalf("empty canvas = %q", res.stdout)
	}
	var post sendResult
	w.ok(t, &post, "", "messages", "send", "--channel", testChannel, "--content", "forum post", "--kind", "45001")
	w.ok(t, nil, "", "messages", "vote", "--event", post.EventID, "--direction", "up")
	w.ok(t, nil, "", "messages", "send", "--channel", testChannel, "--content", "comment", "--kind", "45003", "--reply-to", post.EventID)
	diff := "diff --git a/m.go b/m.go\n@@ -1 +1 @@\n-a\n+b\n"
	w.ok(t, nil, diff, "messages", "send-diff", "--channel", testChannel, "--diff", "-", "--repo", "https://git.example/r.git",
		"--commit", "1a2b3c4d", "--file", "m.go", "--source-branch", "fix", "--target-branch", "main")
	d := w.r.all(t, nostr.Filter{Kinds: []int{workspace.KindDiff}})
	if len(d) != 1 || d[0].Content != diff || tagValue(d[0], "l") != "go" || !hasTag(d[0], "branch", "fix", "main") {
		t.Fatalf("diff event = %v", d)
	}
	v := w.r.all(t, nostr.Filter{Kinds: []int{workspace.KindVote}})
	if len(v) != 1 || v[0].Content != "+" || !tagsEqual(v[0].Tags, nostr.Tags{{"h", testChannel}, {"e", post.EventID}}) {
		t.Fatalf("vote = %v", v)
	}
	var edit relayclient.Result
	w.ok(t, &edit, "", "messages", "edit", "--event", post.EventID, "--content", "forum post, edited")
	w.ok(t, nil, "", "messages", "delete", "--event", post.EventID, "--reason-code", "spam")
	del := w.r.all(t, nostr.Filter{Kinds: []int{workspace.KindDeleteEvent}})
	if len(del) != 1 || !tagsEqual(del[0].Tags, nostr.Tags{{"h", testChannel}, {"e", post.EventID}, {"reason_code", "spam"}}) {
		t.Fatalf("delete = %v", del)
	}

	var created struct {
		relayclient.Result
		ChannelID string `json:"channel_id"`
	}
	w.ok(t, &created, "", "channels", "create", "--name", "release", "--type", "forum", "--visibility", "private", "--description", "ship it")
	if _, err := parseUUID(created.ChannelID); err != nil || !created.Accepted {
		t.Fatalf("create = %+v", created)
	}
	w.ok(t, nil, "", "channels", "add-member", "--channel", created.ChannelID, "--pubkey", w.bob.pk, "--role", "bot")
	w.ok(t, nil, "", "channels", "archive", "--channel", created.ChannelID)
	w.ok(t, nil, "", "channels", "join", "--channel", testChannel)
	var list []channelInfo
	w.ok(t, &list, "", "channels", "list", "--visibility", "open")
	if len(list) != 1 || list[0].Name != "general" || list[0].Description != "talk" {
		t.Fatalf("channels list = %+v", list)
	}
	var mine []channelInfo
	w.ok(t, &mine, "", "channels", "list", "--member")
	if len(mine) != 1 || mine[0].ChannelID != testChannel {
		t.Fatalf("channels list --member = %+v", mine)
	}
	var got *channelInfo
	w.ok(t, &got, "", "channels", "get", "--channel", testChannel)
	if got == nil || got.Pubkey == "" {
		t.Fatalf("channels get = %+v", got)
	}
	var members []map[string]string
	w.ok(t, &members, "", "channels", "members", "--channel", testChannel)
	if len(members) != 4 || members[1]["role"] != "admin" || members[0]["role"] != "member" {
		t.Fatalf("members = %v", members)
	}
	var search []map[string]any
	w.ok(t, &search, "", "channels", "search", "--query", "GEN")
	if len(search) != 1 || search[0]["visibility"] != "open" {
		t.Fatalf("channels search = %v", search)
	}

	w.ok(t, nil, "", "users", "set-profile", "--display-name", "Me Bot")
	var users []map[string]any
	w.ok(t, &users, "", "users", "get")
	if len(users) != 1 || users[0]["display_name"] != "Me Bot" || users[0]["name"] != "me" {
		t.Fatalf("users get = %v", users)
	}
	// Edits in one second each supersede the last (created_at moves on).
	for _, name := range []string{"me2", "me3", "me4", "me"} {
		w.ok(t, nil, "", "users", "set-profile", "--name", name)
		w.ok(t, &users, "", "users", "get")
		if len(users) != 1 || users[0]["name"] != name || users[0]["display_name"] != "Me Bot" {
			t.Fatalf("users get after set-profile --name %s = %v", name, users)
		}
	}
	w.ok(t, &users, "", "--format", "compact", "users", "get", "--pubkey", w.alice.pk, "--pubkey", w.bob.pk)
	if len(users) != 2 || users[0]["display_name"] != "Alice" || users[1]["display_name"] != "Bob" {
		t.Fatalf("users get compact = %v", users)
	}
	var pres relayclient.Result
	w.ok(t, &pres, "", "users", "set-presence", "--status", "online")
	if !pres.Accepted {
		t.Fatalf("presence = %+v", pres)
	}
	w.r.put(t, signed(t, w.alice, workspace.KindStream, "@me look", nostr.Tags{{"h", testChannel}, {"p", w.me.pk}}, 0))
	w.r.put(t, signed(t, w.alice, workspace.KindApprovalRequest, "approve?", nostr.Tags{{"p", w.me.pk}}, 0))
	var feed []outEvent
	w.ok(t, &feed, "", "feed", "get", "--types", "needs_action")
	if len(feed) != 1 || feed[0].Content != "approve?" {
		t.Fatalf("feed needs_action = %v", feed)
	}
	w.ok(t, &feed, "", "feed", "get")
	if len(feed) != 2 {
		t.Fatalf("feed = %v", feed)
	}
	fails(t, w.run(t, "", "feed", "get", "--types", "gossip"), 1, catUser)
}

// TestListPages streams more than two pages from a relay that knows
// nothing of before_id; seconds shared across a page boundary must not
// lose or repeat events.
func TestListPages(t *testing.T) {
	const n = 2*pageSize + 137
	me := newKey(t)
	rl := startPlainRelay(t, false)
	base := int64(1_700_000_000)
	want := map[string]bool{}
	for i := range n {
		ev := signed(t, me, workspace.KindStream, "m"+strconv.Itoa(i), nostr.Tags{{"h", testChannel}}, base+int64(i/7))
		rl.put(t, ev)
		want[ev.ID] = true
	}
	res := runBuzz(t, rl.base, me, "", "--format", "compact", "messages", "list", "--channel", testChannel)
	var got []compactEvent
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &got) != nil {
		t.Fatalf("list: exit %d %s", res.code, res.stderr)
	}
	seen := map[string]bool{}
	for i, ev := range got {
		if seen[ev.ID] || !want[ev.ID] || (i > 0 && ev.CreatedAt > got[i-1].CreatedAt) {
			t.Fatalf("event %d (%s) repeated, unknown or out of order", i, ev.ID)
		}
		seen[ev.ID] = true
	}
	if len(got) != n {
		t.Fatalf("listed %d events; want %d", len(got), n)
	}
	res = runBuzz(t, rl.base, me, "", "messages", "list", "--channel", testChannel, "--limit", "600")
	var some []outEvent
	if json.Unmarshal([]byte(res.stdout), &some) != nil || len(some) != 600 {
		t.Fatalf("list --limit 600 gave %d events", len(some))
	}
}

// TestChannelsCreateDefaults: with no --type or --visibility a channel is an
// open stream, as the web client makes it; a bad value still names itself.
func TestChannelsCreateDefaults(t *testing.T) {
	w := newWorkspace(t)
	var created struct {
		relayclient.Result
		ChannelID string `json:"channel_id"`
	}
	w.ok(t, &created, "", "channels", "create", "--name", "plain")
	evs := w.r.all(t, nostr.Filter{Kinds: []int{workspace.KindCreateGroup}, Tags: nostr.TagMap{"h": {created.ChannelID}}})
	if len(evs) != 1 || tagValue(evs[0], workspace.TagChannelType) != workspace.ChannelTypeStream || tagValue(evs[0], workspace.TagVisibility) != workspace.VisibilityOpen {
		t.Fatalf("create without --type/--visibility = %v", evs)
	}
	if res := w.run(t, "", "channels", "create", "--name", "x", "--type", "board"); res.code != 1 || !strings.Contains(res.stderr, `--type must be stream or forum, got \"board\"`) {
		t.Fatalf("bad --type = %+v", res)
	}
}
