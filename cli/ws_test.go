package cli

import (
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

const testChannel = "3f2a9c1e-8d4b-4c6a-9e2f-1b7d5a0c9e44"

// testSpace is a channel with members and profiles on a plain relay.
type testSpace struct {
	r                    *plainRelay
	me, alice, bob, bob2 testKey
	outsider             testKey
}

func newWorkspace(t *testing.T) *testSpace {
	t.Helper()
	w := &testSpace{me: newKey(t), alice: newKey(t), bob: newKey(t), bob2: newKey(t), outsider: newKey(t)}
	w.r = startPlainRelay(t, true, w.me.pk, w.alice.pk)
	admin := newKey(t)
	w.r.put(t, signed(t, admin, workspace.KindGroupMembers, "", nostr.Tags{{"d", testChannel},
		{"p", w.me.pk}, {"p", w.alice.pk, "", "admin"}, {"p", w.bob.pk}, {"p", w.bob2.pk, "", "bot"}}, 0))
	w.r.put(t, signed(t, admin, workspace.KindGroupMetadata, "", nostr.Tags{{"d", testChannel}, {"name", "general"}, {"about", "talk"}, {"public"}}, 0))
	for _, p := range []struct {
		k    testKey
		body string
	}{{w.alice, `{"display_name":"Alice","name":"al"}`}, {w.bob, `{"name":"Bob"}`}, {w.bob2, `{"display_name":"bob"}`}, {w.me, `{"name":"me"}`}} {
		w.r.put(t, signed(t, p.k, workspace.KindProfile, p.body, nil, 0))
	}
	return w
}

func (w *testSpace) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runBuzz(t, w.r.base, w.me, stdin, args...)
}

// ok runs buzz, wants exit 0 and decodes stdout into v.
func (w *testSpace) ok(t *testing.T, v any, stdin string, args ...string) {
	t.Helper()
	res := w.run(t, stdin, args...)
	if res.code != 0 {
		t.Fatalf("buzz %v: exit %d, stderr %s", args, res.code, res.stderr)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(res.stdout), v); err != nil {
			t.Fatalf("buzz %v: stdout %q is not JSON: %v", args, res.stdout, err)
		}
	}
}

// fails runs buzz and wants exit code and error category.
func fails(t *testing.T, res result, code int, category string) {
	t.Helper()
	if res.code != code {
		t.Fatalf("exit = %d; want %d (stderr %s)", res.code, code, res.stderr)
	}
	var e struct {
		Error     string `json:"error"`
		Message   string `json:"message"`
		Retryable *bool  `json:"retryable"`
	}
	line := strings.TrimSpace(res.stderr)
	if strings.Contains(line, "\n") || json.Unmarshal([]byte(line), &e) != nil || e.Retryable == nil {
		t.Fatalf("stderr is not one JSON error line: %q", res.stderr)
	}
	if e.Error != category {
		t.Fatalf("error category = %q; want %q (%s)", e.Error, category, e.Message)
	}
	if res.stdout != "" {
		t.Fatalf("stdout on failure: %q", res.stdout)
	}
}

func (w *testSpace) messages(t *testing.T) []*nostr.Event {
	return w.r.all(t, nostr.Filter{Kinds: []int{workspace.KindStream}})
}

func TestWebsocketSendGetThread(t *testing.T) {
	w := newWorkspace(t)
	var sent sendResult
	w.ok(t, &sent, "", "messages", "send", "--channel", testChannel, "--content", "hello")
	if !sent.Accepted || len(sent.EventID) != 64 || sent.MentionPubkeys == nil || len(sent.MentionPubkeys) != 0 {
		t.Fatalf("send = %+v; want accepted, an id and mention_pubkeys []", sent)
	}
	root := sent.EventID
	stored := w.messages(t)
	if len(stored) != 1 || stored[0].Content != "hello" || stored[0].PubKey != w.me.pk ||
		len(stored[0].Tags) != 1 || stored[0].Tags[0][0] != "h" || stored[0].Tags[0][1] != testChannel {
		t.Fatalf("stored = %v; want one kind 9 hello with only [h C]", stored)
	}

	var r1, r2 sendResult
	w.ok(t, &r1, "multi $x `y`\nline two\n", "messages", "send", "--channel", testChannel, "--content", "-", "--reply-to", root)
	w.ok(t, &r2, "", "messages", "send", "--channel", testChannel, "--content", "deeper", "--reply-to", r1.EventID, "--broadcast")
	byID := map[string]*nostr.Event{}
	for _, ev := range w.messages(t) {
		byID[ev.ID] = ev
	}
	if got := byID[r1.EventID]; got == nil || got.Content != "multi $x `y`\nline two\n" ||
		!tagsEqual(got.Tags, nostr.Tags{{"h", testChannel}, {"e", root, "", "reply"}}) {
		t.Fatalf("direct reply = %v; want stdin verbatim and only a reply marker", got)
	}
	if got := byID[r2.EventID]; got == nil ||
		!tagsEqual(got.Tags, nostr.Tags{{"h", testChannel}, {"e", root, "", "root"}, {"e", r1.EventID, "", "reply"}, {"broadcast", "1"}}) {
		t.Fatalf("nested reply tags = %v; want root, reply, broadcast", got.Tags)
	}

	var got []outEvent
	w.ok(t, &got, "", "messages", "get", "--channel", testChannel)
	if len(got) != 3 || got[0].CreatedAt > got[2].CreatedAt {
		t.Fatalf("messages get = %d events; want 3 ascending", len(got))
	}
	var compact []map[string]any
	w.ok(t, &compact, "", "--format", "compact", "messages", "get", "--channel", testChannel, "--limit", "999")
	if len(compact) != 3 || len(compact[0]) != 3 || compact[0]["id"] == nil {
		t.Fatalf("compact get = %v; want 3 events with id, content, created_at", compact)
	}

	var thread []outEvent
	w.ok(t, &thread, "", "messages", "thread", "--channel", testChannel, "--event", r2.EventID)
	if len(thread) != 3 || thread[0].ID != root {
		t.Fatalf("thread = %v; want root first and two replies", thread)
	}
	res := w.run(t, "", "messages", "thread", "--channel", "11111111-2222-4333-8444-555555555555", "--event", r2.EventID)
	fails(t, res, 1, catUser)

	res = w.run(t, "", "messages", "send", "--channel", testChannel, "--content", "x", "--reply-to", strings.Repeat("ab", 32))
	fails(t, res, 1, catNotFound)
}

func TestWebsocketReactions(t *testing.T) {
	w := newWorkspace(t)
	var sent sendResult
	w.ok(t, &sent, "", "messages", "send", "--channel", testChannel, "--content", "react to me")
	var add relayclient.Result
	w.ok(t, &add, "", "reactions", "add", "--event", sent.EventID, "--emoji", "👍")
	stored := w.r.all(t, nostr.Filter{Kinds: []int{workspace.KindReaction}})
	if len(stored) != 1 || stored[0].Content != "👍" || !tagsEqual(stored[0].Tags, nostr.Tags{{"h", testChannel}, {"e", sent.EventID}}) {
		t.Fatalf("reaction = %v; want kind 7 👍 with only the message's [h channel] and [e id]", stored)
	}
	w.r.put(t, signed(t, w.alice, workspace.KindReaction, "", nostr.Tags{{"e", sent.EventID}}, 0))
	var got struct{ Reactions []reactionGroup }
	w.ok(t, &got, "", "reactions", "get", "--event", sent.EventID)
	npub, _ := nip19.EncodePublicKey(w.me.pk)
	if len(got.Reactions) != 2 || got.Reactions[0].Emoji != "+" || got.Reactions[1].Emoji != "👍" ||
		got.Reactions[1].Count != 1 || got.Reactions[1].Pubkeys[0] != npub {
		t.Fatalf("reactions get = %+v; want + then 👍 by my npub", got)
	}
	w.ok(t, nil, "", "reactions", "remove", "--event", sent.EventID, "--emoji", "👍")
	del := w.r.all(t, nostr.Filter{Kinds: []int{workspace.KindDeletion}})
	if len(del) != 1 || !tagsEqual(del[0].Tags, nostr.Tags{{"h", testChannel}, {"e", add.EventID}}) {
		t.Fatalf("deletion = %v; want kind 5 naming the reaction, in its channel", del)
	}
	res := w.run(t, "", "reactions", "remove", "--event", sent.EventID, "--emoji", "🎉")
	fails(t, res, 4, catOther)
}

func TestWebsocketMentions(t *testing.T) {
	w := newWorkspace(t)
	var sent sendResult
	w.ok(t, &sent, "", "messages", "send", "--channel", testChannel, "--content", "hi @alice, see this")
	if len(sent.MentionPubkeys) != 1 || sent.MentionPubkeys[0] != w.alice.pk {
		t.Fatalf("@alice resolved to %v; want [%s]", sent.MentionPubkeys, w.alice.pk)
	}
	npub, _ := nip19.EncodePublicKey(w.bob.pk)
	w.ok(t, &sent, "", "messages", "send", "--channel", testChannel, "--content", "ping nostr:"+npub+" and `@nobody`", "--mention", w.alice.pk)
	if strings.Join(sent.MentionPubkeys, ",") != w.alice.pk+","+w.bob.pk {
		t.Fatalf("mentions = %v; want explicit then URI", sent.MentionPubkeys)
	}
	// An @word that names nobody is text: the message goes out unmentioned.
	for _, text := range []string{"hey @carol", "use the @latest tag"} {
		w.ok(t, &sent, "", "messages", "send", "--channel", testChannel, "--content", text)
		if len(sent.MentionPubkeys) != 0 {
			t.Errorf("%q mentions %v; want none", text, sent.MentionPubkeys)
		}
	}
	before := len(w.messages(t))
	res := w.run(t, "", "messages", "send", "--channel", testChannel, "--content", "hey @bob") // two members are bob
	fails(t, res, 1, catUser)
	if !strings.Contains(res.stderr, "--mention") {
		t.Errorf("ambiguous @bob: stderr %s does not point at --mention", res.stderr)
	}
	res = w.run(t, "", "messages", "send", "--channel", testChannel, "--content", "hi", "--mention", w.outsider.pk)
	fails(t, res, 1, catUser)
	if !strings.Contains(res.stderr, "missing_member_pubkeys") || !strings.Contains(res.stderr, "add-member") {
		t.Errorf("non-member mention: stderr %s lacks missing_member_pubkeys and the add-member hint", res.stderr)
	}
	var many []string
	for range maxMentions + 1 {
		many = append(many, "--mention", newKey(t).pk)
	}
	res = w.run(t, "", append([]string{"messages", "send", "--channel", testChannel, "--content", "crowd"}, many...)...)
	fails(t, res, 1, catUser)
	if after := len(w.messages(t)); after != before {
		t.Fatalf("refused sends posted %d events", after-before)
	}
}

// TestMessagesGetReplyTiesQuestion: a question and its reply signed in
// the same second list question first, whatever their ids.
func TestMessagesGetReplyTiesQuestion(t *testing.T) {
	w := newWorkspace(t)
	at := time.Now().Unix()
	q := signed(t, w.alice, workspace.KindStream, "what is in this directory?", nostr.Tags{{"h", testChannel}}, at)
	var a *nostr.Event
	for i := 0; a == nil || a.ID > q.ID; i++ { // a reply whose id sorts first
		a = signed(t, w.me, workspace.KindStream, fmt.Sprintf("a README (%d)", i), nostr.Tags{{"h", testChannel}, {"e", q.ID, "", "reply"}}, at)
	}
	w.r.put(t, a)
	w.r.put(t, q)
	var got []outEvent
	w.ok(t, &got, "", "messages", "get", "--channel", testChannel)
	if len(got) != 2 || got[0].ID != q.ID || got[1].ID != a.ID {
		t.Fatalf("messages get = %+v; want the question %s, then the reply %s", got, q.ID, a.ID)
	}
}

func TestValidationAndExitCodes(t *testing.T) {
	w := newWorkspace(t)
	big := strings.Repeat("a", maxContentBytes+1)
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		cat   string
	}{
		{"65537 bytes", "", []string{"messages", "send", "--channel", testChannel, "--content", big}, 1, catUser},
		{"65537 bytes stdin", big, []string{"messages", "send", "--channel", testChannel, "--content", "-"}, 1, catUser},
		{"empty stdin", "", []string{"messages", "send", "--channel", testChannel, "--content", "-"}, 1, catUser},
		{"whitespace", "", []string{"messages", "send", "--channel", testChannel, "--content", " \n\t"}, 1, catUser},
		{"bad uuid", "", []string{"messages", "get", "--channel", "not-a-uuid"}, 1, catUser},
		{"bad hex", "", []string{"reactions", "get", "--event", "xyz"}, 1, catUser},
		{"bad kind", "", []string{"messages", "send", "--channel", testChannel, "--content", "x", "--kind", "1"}, 1, catUser},
		{"comment without parent", "", []string{"messages", "send", "--channel", testChannel, "--content", "x", "--kind", "45003"}, 1, catUser},
		{"unknown flag", "", []string{"messages", "get", "--chanel", testChannel}, 1, catUser},
		{"unknown command", "", []string{"messages", "shout"}, 1, catUser},
		{"bad format", "", []string{"--format", "yaml", "channels", "list"}, 1, catUser},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { fails(t, w.run(t, c.stdin, c.args...), c.code, c.cat) })
	}
	if n := len(w.messages(t)); n != 0 {
		t.Fatalf("refused commands posted %d messages", n)
	}
	t.Run("no key", func(t *testing.T) {
		fails(t, runBuzz(t, w.r.base, testKey{}, "", "channels", "list"), 3, catAuth)
	})
	t.Run("bad key", func(t *testing.T) {
		res := runBuzz(t, w.r.base, testKey{sk: "nsec1notakey"}, "", "channels", "list")
		fails(t, res, 3, catKey)
		if !strings.Contains(res.stderr, "key error: invalid BUZZ_PRIVATE_KEY") {
			t.Errorf("stderr %s", res.stderr)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		res := runBuzz(t, w.r.base, w.outsider, "", "messages", "send", "--channel", testChannel, "--content", "let me in")
		fails(t, res, 3, catAuth)
	})
	t.Run("relay down", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		res := runBuzz(t, "http://"+addr, w.me, "", "messages", "send", "--channel", testChannel, "--content", "anyone?")
		fails(t, res, 2, catNetwork)
		if !strings.Contains(res.stderr, `"retryable":true`) {
			t.Errorf("relay down: stderr %s; want retryable true", res.stderr)
		}
	})
}

func TestHelpEverywhere(t *testing.T) {
	for _, c := range commands() {
		args := append(strings.Fields(c.path()), "--help")
		res := runBuzzEnv(t, nil, "", args...)
		if res.code != 0 || !strings.Contains(res.stdout, "Example:\n") || !(strings.Contains(res.stdout, "buzz "+c.path()+" ") || strings.Contains(res.stdout, "buzz "+c.path()+"\n")) ||
			!strings.Contains(res.stdout, "Usage: buzz "+c.path()) {
			t.Errorf("buzz %s --help: exit %d, stdout %q", c.path(), res.code, res.stdout)
		}
	}
	res := runBuzzEnv(t, nil, "", "--help")
	if res.code != 0 || !strings.Contains(res.stdout, "messages send") {
		t.Errorf("buzz --help: exit %d, stdout %q", res.code, res.stdout)
	}
}

func TestKeygenWhoami(t *testing.T) {
	res := runBuzzEnv(t, nil, "", "keygen")
	var k struct{ Nsec, Npub, Pubkey string }
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &k) != nil || !strings.HasPrefix(k.Nsec, "nsec1") || !strings.HasPrefix(k.Npub, "npub1") {
		t.Fatalf("keygen: exit %d, stdout %q", res.code, res.stdout)
	}
	res = runBuzzEnv(t, []string{"BUZZ_PRIVATE_KEY=" + k.Nsec}, "", "whoami")
	var who struct{ Pubkey, Npub string }
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &who) != nil || who.Pubkey != k.Pubkey || who.Npub != k.Npub {
		t.Fatalf("whoami = %q (exit %d); want %s", res.stdout, res.code, k.Pubkey)
	}
	if strings.Contains(res.stdout+res.stderr, k.Nsec) {
		t.Fatal("whoami printed the secret key")
	}
	dir := t.TempDir()
	kf := filepath.Join(dir, "key")
	os.WriteFile(kf, []byte(k.Nsec+"\n"), 0o644)
	res = runBuzzEnv(t, []string{"BUZZ_KEYFILE=" + kf}, "", "whoami")
	fails(t, res, 3, catKey)
	if !strings.Contains(res.stderr, "insecure permissions") {
		t.Errorf("0644 key file: stderr %s", res.stderr)
	}
	os.Chmod(kf, 0o600)
	res = runBuzzEnv(t, []string{"BUZZ_KEYFILE=" + kf}, "", "whoami")
	if res.code != 0 || !strings.Contains(res.stdout, k.Pubkey) {
		t.Fatalf("0600 key file: exit %d, %s %s", res.code, res.stdout, res.stderr)
	}
}

// TestNostrToolsVerifies hands what the CLI published to nostr-tools.
func TestNostrToolsVerifies(t *testing.T) {
	modules, node := testexeNode(t)
	w := newWorkspace(t)
	var root sendResult
	w.ok(t, &root, "", "messages", "send", "--channel", testChannel, "--content", "hi @Alice ✓")
	w.ok(t, nil, "", "messages", "send", "--channel", testChannel, "--content", "reply", "--reply-to", root.EventID)
	w.ok(t, nil, "", "reactions", "add", "--event", root.EventID, "--emoji", "🎉")
	evs := w.r.all(t, nostr.Filter{Authors: []string{w.me.pk}, Kinds: []int{workspace.KindStream, workspace.KindReaction}})
	if len(evs) != 3 {
		t.Fatalf("stored %d events by the CLI key; want 3", len(evs))
	}
	file := filepath.Join(t.TempDir(), "events.json")
	b, _ := json.Marshal(evs)
	os.WriteFile(file, b, 0o600)
	script := `
const { verifyEvent } = require('nostr-tools/pure');
const evs = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
const out = evs.map(e => ({ id: e.id, ok: verifyEvent(e), kind: e.kind, h: (e.tags.find(t => t[0] === 'h') || [])[1] || null,
  p: e.tags.filter(t => t[0] === 'p').map(t => t[1]), e: e.tags.filter(t => t[0] === 'e') }));
console.log(JSON.stringify(out));`
	cmd := exec.CommandContext(t.Context(), node, "-e", script, file)
	cmd.Env = []string{"NODE_PATH=" + modules}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var checks []struct {
		ID   string
		OK   bool
		Kind int
		H    *string
		P    []string
		E    [][]string
	}
	if err := json.Unmarshal(out, &checks); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	for _, c := range checks {
		if !c.OK {
			t.Errorf("nostr-tools rejects the signature of %s (kind %d)", c.ID, c.Kind)
		}
		switch {
		case c.Kind == workspace.KindStream && c.ID == root.EventID:
			if c.H == nil || *c.H != testChannel || len(c.P) != 1 || c.P[0] != w.alice.pk {
				t.Errorf("root as nostr-tools sees it: h %v p %v", c.H, c.P)
			}
		case c.Kind == workspace.KindStream:
			if len(c.E) != 1 || c.E[0][1] != root.EventID || c.E[0][3] != "reply" {
				t.Errorf("reply e tags as nostr-tools sees them: %v", c.E)
			}
		case c.Kind == workspace.KindReaction:
			if c.H == nil || *c.H != testChannel || len(c.E) != 1 || c.E[0][1] != root.EventID {
				t.Errorf("reaction tags as nostr-tools sees them: h %v e %v", c.H, c.E)
			}
		}
	}
}

func tagsEqual(a, b nostr.Tags) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

var _ = time.Second
