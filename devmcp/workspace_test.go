package devmcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
	"buzzbox/relay"

	"github.com/nbd-wtf/go-nostr"
)

// newKey makes a key and returns it with its hex forms.
func newKey(t *testing.T) (sk *nostrkey.Secret, secretHex, pubHex string) {
	t.Helper()
	sk, err := nostrkey.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	h, err := sk.AppendHex(nil)
	if err != nil {
		t.Fatal(err)
	}
	return sk, string(h), sk.Public().Hex()
}

// workspaceEnv configures the workspace tools with an unreachable relay:
// enough for them to be listed.
func workspaceEnv(t *testing.T) []string {
	_, sec, _ := newKey(t)
	return []string{"BUZZ_RELAY_URL=ws://127.0.0.1:9", "BUZZ_PRIVATE_KEY=" + sec}
}

// buzzCLI runs the built buzz CLI against relayURL as the key secretHex
// and decodes its JSON answer into out.
func buzzCLI(t *testing.T, relayURL, secretHex string, out any, args ...string) {
	t.Helper()
	cmd := exec.Command(testexe.Link(t, "buzz"), args...)
	cmd.Env = append(os.Environ(), "BUZZ_RELAY_URL="+relayURL, "BUZZ_PRIVATE_KEY="+secretHex, "BUZZ_AUTH_TAG=")
	stdout, stderr, code := testexe.Run(t, cmd)
	if code != 0 {
		t.Fatalf("buzz %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(stdout), out); err != nil {
			t.Fatalf("buzz %s: %v in %q", strings.Join(args, " "), err, stdout)
		}
	}
}

type threadEvent struct {
	ID      string     `json:"id"`
	PubKey  string     `json:"pubkey"`
	Content string     `json:"content"`
	Tags    [][]string `json:"tags"`
}

// testWorkspace is a relay with a channel the agent is a member of and an
// owner's message in it, for the workspace tools to answer.
type testWorkspace struct {
	relay              string // ws:// URL
	channel, root      string // channel id, id of the owner's message
	ownerHex, ownerPub string
	agentPub           string
	keyFile            string // 0600 file with the agent's key, for NOSTR_PRIVATE_KEY_FILE
}

func newTestWorkspace(t *testing.T) testWorkspace {
	t.Helper()
	_, ownerHex, ownerPub := newKey(t)
	_, agentHex, agentPub := newKey(t)
	r, err := relay.Start(relay.Config{DataDir: t.TempDir(), Owner: ownerPub, Allow: []string{agentPub}, Logger: slog.New(slog.DiscardHandler)}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var created struct {
		ChannelID string `json:"channel_id"`
	}
	buzzCLI(t, r.URL(), ownerHex, &created, "channels", "create", "--name", "general", "--type", "stream", "--visibility", "open")
	buzzCLI(t, r.URL(), ownerHex, nil, "channels", "add-member", "--channel", created.ChannelID, "--pubkey", agentPub)
	var root struct {
		EventID string `json:"event_id"`
	}
	buzzCLI(t, r.URL(), ownerHex, &root, "messages", "send", "--channel", created.ChannelID, "--content", "what is 6*7?")
	keyFile := filepath.Join(t.TempDir(), "agent.key")
	if err := os.WriteFile(keyFile, []byte(agentHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return testWorkspace{relay: r.URL(), channel: created.ChannelID, root: root.EventID, ownerHex: ownerHex, ownerPub: ownerPub, agentPub: agentPub, keyFile: keyFile}
}

// thread reads the thread of event as the owner, through the CLI.
func (w testWorkspace) thread(t *testing.T, event string) []threadEvent {
	t.Helper()
	var out []threadEvent
	buzzCLI(t, w.relay, w.ownerHex, &out, "messages", "thread", "--channel", w.channel, "--event", event)
	return out
}

// TestWorkspaceToolsPostWithoutShell: where an agent's sandbox strips
// BUZZ_* variables or resets PATH, `buzz messages send` in the shell
// cannot answer. send_message, add_reaction and read_thread sign with the
// key buzz-dev-mcp holds (here handed over as NOSTR_PRIVATE_KEY_FILE) and
// reach the relay with no shell at all; the CLI reads back what they
// wrote as the CLI itself would have written it.
func TestWorkspaceToolsPostWithoutShell(t *testing.T) {
	ws := newTestWorkspace(t)
	r, ch, root, ownerHex, ownerPub, agentPub, keyFile := ws.relay, ws.channel, ws.root, ws.ownerHex, ws.ownerPub, ws.agentPub, ws.keyFile
	// The owner's attestation rides on what the agent signs.
	var authTag []string
	buzzCLI(t, r, ownerHex, &authTag, "agents", "attest", "--agent", agentPub)
	authJSON, _ := json.Marshal(authTag)
	// No shell: BUZZ_SHELL names nothing and PATH is empty.
	p := startServer(t, startOpts{env: []string{"BUZZ_RELAY_URL=" + r, "NOSTR_PRIVATE_KEY_FILE=" + keyFile,
		"BUZZ_AUTH_TAG=" + string(authJSON), "BUZZ_SHELL=/nonexistent/sh", "PATH="}})
	p.initialize("2025-11-25")
	names := listNames(t, p.call("tools/list", nil))
	for _, want := range []string{"add_reaction", "read_thread", "send_message"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list = %v; want %s", names, want)
		}
	}

	var sent struct {
		EventID        string   `json:"event_id"`
		Accepted       bool     `json:"accepted"`
		MentionPubkeys []string `json:"mention_pubkeys"`
	}
	answer := "42\n\nsix times seven, @owner"
	res := p.tool("send_message", map[string]any{"channel": ch, "content": answer, "reply_to": root, "mentions": []string{ownerPub}})
	if err := json.Unmarshal([]byte(okText(t, res)), &sent); err != nil || !sent.Accepted || !slices.Equal(sent.MentionPubkeys, []string{ownerPub}) {
		t.Fatalf("send_message = %v (%v); want an accepted event mentioning the owner", res, err)
	}

	var thread []threadEvent
	buzzCLI(t, r, ownerHex, &thread, "messages", "thread", "--channel", ch, "--event", root)
	if len(thread) != 2 || thread[0].ID != root {
		t.Fatalf("thread = %+v; want the root and one reply", thread)
	}
	reply := thread[1]
	if reply.ID != sent.EventID || reply.PubKey != agentPub || reply.Content != answer {
		t.Errorf("reply = %+v; want event %s by the agent %s with %q", reply, sent.EventID, agentPub, answer)
	}
	hasTag := func(want ...string) bool {
		return slices.ContainsFunc(reply.Tags, func(tag []string) bool { return slices.Equal(tag, want) })
	}
	if !hasTag("h", ch) || !hasTag("e", root, "", "reply") || !hasTag("p", ownerPub) || !hasTag(authTag...) {
		t.Errorf("reply tags = %v; want h, the reply e tag, the mention and the auth tag %v", reply.Tags, authTag)
	}

	okText(t, p.tool("add_reaction", map[string]any{"event": root, "emoji": "👀"}))
	var reactions struct {
		Reactions []struct {
			Emoji   string   `json:"emoji"`
			Pubkeys []string `json:"pubkeys"`
		} `json:"reactions"`
	}
	buzzCLI(t, r, ownerHex, &reactions, "reactions", "get", "--event", root)
	agentNpub, _ := nostrkey.HexToNpub(agentPub)
	if len(reactions.Reactions) != 1 || reactions.Reactions[0].Emoji != "👀" || !slices.Equal(reactions.Reactions[0].Pubkeys, []string{agentNpub}) {
		t.Errorf("reactions = %+v; want 👀 by the agent", reactions)
	}
	// In the message's channel, whose readers alone the relay serves it to.
	ownerKey, err := nostrkey.ParseSecret(ownerHex)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stored, err := relayclient.New(r, relayclient.Options{Key: ownerKey}).Query(ctx, nostr.Filter{Kinds: []int{workspace.KindReaction}, Authors: []string{agentPub}})
	if err != nil || len(stored) != 1 || stored[0].Tags.FindWithValue("h", ch) == nil || stored[0].Tags.FindWithValue("e", root) == nil {
		t.Errorf("stored reactions = %v (%v); want one with [h %s] and [e %s]", stored, err, ch, root)
	}

	var read []threadEvent
	if err := json.Unmarshal([]byte(okText(t, p.tool("read_thread", map[string]any{"channel": ch, "event": sent.EventID}))), &read); err != nil ||
		len(read) != 2 || read[1].Content != answer {
		t.Errorf("read_thread = %+v (%v); want the root and the reply", read, err)
	}

	// Mistakes come back as the CLI's own error, for the model to fix.
	if msg := errText(t, p.tool("send_message", map[string]any{"channel": "general", "content": "x"})); !strings.Contains(msg, "user_error") {
		t.Errorf("send_message to a channel name = %q; want the CLI's user error", msg)
	}
	if msg := errText(t, p.tool("send_message", map[string]any{"channel": ch, "content": "x", "kind": 1})); !strings.Contains(msg, "unknown field") {
		t.Errorf("send_message with an unknown argument = %q", msg)
	}
}

// TestWorkspaceToolsNeedRelayAndKey: without a relay URL or without a key
// the workspace tools are not offered (they could only fail).
func TestWorkspaceToolsNeedRelayAndKey(t *testing.T) {
	_, sec, _ := newKey(t)
	for _, env := range [][]string{nil, {"BUZZ_RELAY_URL=ws://127.0.0.1:9"}, {"BUZZ_PRIVATE_KEY=" + sec},
		{"BUZZ_RELAY_URL=ws://127.0.0.1:9", "BUZZ_PRIVATE_KEY=not-a-key"}} {
		p := startServer(t, startOpts{env: env})
		instr := p.initialize("2025-11-25")["instructions"].(string)
		if names := listNames(t, p.call("tools/list", nil)); !slices.Equal(names, wantTools) {
			t.Errorf("env %v: tools/list = %v; want %v", env, names, wantTools)
		}
		if strings.Contains(instr, "send_message") {
			t.Errorf("env %v: instructions name send_message: %q", env, instr)
		}
	}
	p := startServer(t, startOpts{env: workspaceEnv(t)})
	if instr := p.initialize("2025-11-25")["instructions"].(string); !strings.Contains(instr, "send_message") {
		t.Errorf("configured: instructions %q do not point at send_message", instr)
	}
}

// fakeBuzz writes an executable buzz stand-in to dir for BUZZ_CLI: it
// records its arguments and environment in dir/dump, then answers as the
// file dir/mode says: "ok" prints a JSON answer, "fail" prints the CLI's
// error object on stderr and exits 1, "silent" exits 3 saying nothing.
func fakeBuzz(t *testing.T, dir string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in is a shell script")
	}
	script := filepath.Join(dir, "buzz")
	body := "#!/bin/sh\n" +
		"{ echo \"ARGS $*\"; env; } > '" + filepath.Join(dir, "dump") + "'\n" +
		"case $(cat '" + filepath.Join(dir, "mode") + "') in\n" +
		"ok) echo '{\"event_id\":\"e1\",\"accepted\":true}' ;;\n" +
		"fail) echo '{\"error\":{\"category\":\"user_error\",\"message\":\"no such channel\"}}' >&2; exit 1 ;;\n" +
		"*) exit 3 ;;\n" +
		"esac\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestAttackWorkspaceKeyInChildEnviron: the workspace tools run buzz as a
// child process (BUZZ_CLI when set). The agent's key, handed to the
// server as a file, must reach that child only as a 0600 file in a
// private 0700 directory: never in its environment, which
// /proc/PID/environ shows, nor on its command line.
func TestAttackWorkspaceKeyInChildEnviron(t *testing.T) {
	_, sec, _ := newKey(t)
	keyFile := filepath.Join(t.TempDir(), "agent.key")
	if err := os.WriteFile(keyFile, []byte(sec+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cli := fakeBuzz(t, dir)
	os.WriteFile(filepath.Join(dir, "mode"), []byte("ok"), 0o600)
	p := startServer(t, startOpts{env: []string{"BUZZ_RELAY_URL=ws://127.0.0.1:9", "NOSTR_PRIVATE_KEY_FILE=" + keyFile, "BUZZ_CLI=" + cli}})
	p.initialize("2025-11-25")
	if got := okText(t, p.tool("send_message", map[string]any{"channel": "c", "content": "hi"})); !strings.Contains(got, `"e1"`) {
		t.Fatalf("send_message = %q; want the stand-in's answer", got)
	}
	dump, err := os.ReadFile(filepath.Join(dir, "dump"))
	if err != nil {
		t.Fatalf("the BUZZ_CLI stand-in never ran: %v", err)
	}
	if strings.Contains(string(dump), sec) {
		t.Fatalf("the key is in the child's environment or arguments:\n%s", dump)
	}
	for _, name := range []string{"BUZZ_PRIVATE_KEY=", "NOSTR_PRIVATE_KEY=", "NOSTR_PRIVATE_KEY_FILE="} {
		if strings.Contains(string(dump), "\n"+name) {
			t.Errorf("the child's environment sets %s:\n%s", name, dump)
		}
	}
	if !strings.Contains(string(dump), "ARGS messages send --channel=c --content=-") {
		t.Errorf("child arguments: %s; want messages send with the content on stdin", dump)
	}
	var file string
	for _, l := range strings.Split(string(dump), "\n") {
		if v, ok := strings.CutPrefix(l, "BUZZ_KEYFILE="); ok {
			file = v
		}
	}
	if file == "" {
		t.Fatalf("the child got no BUZZ_KEYFILE:\n%s", dump)
	}
	got, err := os.ReadFile(file)
	if err != nil || strings.TrimSpace(string(got)) != sec {
		t.Errorf("BUZZ_KEYFILE %s holds %q, %v; want the agent's key", file, got, err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, %v; want 0600", fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(file)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("key file's directory mode %v, %v; want 0700", fi, err)
	}
}

// TestWorkspaceToolsMapChildExit: a buzz command that fails hands the
// model the CLI's own error object from its stderr; one that fails
// silently, its exit code.
func TestWorkspaceToolsMapChildExit(t *testing.T) {
	_, sec, _ := newKey(t)
	dir := t.TempDir()
	cli := fakeBuzz(t, dir)
	p := startServer(t, startOpts{env: []string{"BUZZ_RELAY_URL=ws://127.0.0.1:9", "BUZZ_PRIVATE_KEY=" + sec, "BUZZ_CLI=" + cli}})
	p.initialize("2025-11-25")
	os.WriteFile(filepath.Join(dir, "mode"), []byte("fail"), 0o600)
	if msg := errText(t, p.tool("add_reaction", map[string]any{"event": "e", "emoji": "👀"})); !strings.Contains(msg, `"message":"no such channel"`) {
		t.Errorf("add_reaction with a failing CLI = %q; want its error object", msg)
	}
	os.WriteFile(filepath.Join(dir, "mode"), []byte("silent"), 0o600)
	if msg := errText(t, p.tool("read_thread", map[string]any{"channel": "c", "event": "e"})); msg != "buzz messages thread failed with exit code 3" {
		t.Errorf("read_thread with a silent failing CLI = %q; want the exit code named", msg)
	}
}
