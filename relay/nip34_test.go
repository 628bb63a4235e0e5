package relay

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// nip34Parsed is what testdata/nip34_check.mjs says of one event.
type nip34Parsed struct {
	ID       string              `json:"id"`
	Valid    bool                `json:"valid"`
	Kind     string              `json:"kind"`
	Tags     map[string][]string `json:"tags"`
	Root     string              `json:"root"`
	RootKind int                 `json:"rootKind"`
}

// nostrToolsParse has nostr-tools verify and read evs.
func nostrToolsParse(t *testing.T, evs ...*nostr.Event) []nip34Parsed {
	t.Helper()
	modules, node := testexe.NodeModules(t)
	in, _ := json.Marshal(evs)
	cmd := exec.CommandContext(testCtx(t), node, filepath.Join("testdata", "nip34_check.mjs"))
	cmd.Env = []string{"NODE_MODULES=" + modules}
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nip34_check.mjs: %v\n%s", err, stderr.String())
	}
	var out []nip34Parsed
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("nip34_check.mjs output %q: %v", stdout.String(), err)
	}
	return out
}

// commitFile commits name with body in work and returns the commit id.
func commitFile(t testing.TB, env []string, work, name, body, msg string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	gitOK(t, env, work, "add", name)
	gitOK(t, env, work, "commit", "--quiet", "-m", msg)
	return strings.TrimSpace(gitOK(t, env, work, "rev-parse", "HEAD"))
}

// repoEvent returns the one event of kind for d the caller of c sees, or nil.
func repoEvent(t *testing.T, c *nostr.Relay, kind int, d string) *nostr.Event {
	t.Helper()
	evs, reason := query(t, c, nostr.Filter{Kinds: []int{kind}, Tags: nostr.TagMap{"d": {d}}})
	if reason != "" {
		t.Fatalf("query kind %d: %s", kind, reason)
	}
	if len(evs) == 0 {
		return nil
	}
	return evs[0]
}

// TestNIP34StateAfterPush pushes with real git to the built relay and
// reads the relay-signed 30617 and 30618 back: the announcement names the
// repository, its clone URL and maintainer; the state follows each push;
// only those who may read the repository see either; nostr-tools verifies
// both and knows their kinds.
func TestNIP34StateAfterPush(t *testing.T) {
	needGit(t)
	alice, bob, carol := newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", bob.pk+","+carol.pk)
	env := gitEnv(t)
	repoURL := b.http() + "/git/" + alice.pk + "/proj.git"
	d := alice.pk + "/proj"

	work := t.TempDir()
	gitOK(t, env, work, "init", "--quiet", "-b", "main")
	first := commitFile(t, env, work, "README", "hello\n", "first")
	gitOK(t, env, work, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "main")...)

	ca := login(t, b.url, alice)
	state := repoEvent(t, ca, workspace.KindRepoState, d)
	if state == nil {
		t.Fatal("no 30618 after the first push")
	}
	if v, _ := tagValue(state, "refs/heads/main"); v != first {
		t.Fatalf("30618 refs/heads/main = %q; want %s (tags %v)", v, first, state.Tags)
	}
	if v, _ := tagValue(state, "HEAD"); v != "ref: refs/heads/main" {
		t.Errorf("30618 HEAD = %q", v)
	}
	ann := repoEvent(t, ca, workspace.KindRepoAnnouncement, d)
	if ann == nil {
		t.Fatal("no relay-signed 30617 after the first push")
	}
	if ann.PubKey == alice.pk {
		t.Fatal("30617 for d=owner/name signed by the owner; want the relay")
	}
	if v, _ := tagValue(ann, "clone"); v != repoURL {
		t.Errorf("30617 clone = %q; want %s", v, repoURL)
	}
	if v, _ := tagValue(ann, "maintainers"); v != alice.pk {
		t.Errorf("30617 maintainers = %q", v)
	}
	if v, _ := tagValue(ann, "name"); v != "proj" {
		t.Errorf("30617 name = %q", v)
	}
	if ann.Tags.FindWithValue("r", first) == nil {
		t.Errorf("30617 has no r tag with the root commit: %v", ann.Tags)
	}

	// A second push (a new branch and a new commit on main) moves the state.
	gitOK(t, env, work, "checkout", "--quiet", "-b", "feat")
	feat := commitFile(t, env, work, "F", "f\n", "feat")
	gitOK(t, env, work, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "feat")...)
	state = repoEvent(t, ca, workspace.KindRepoState, d)
	if v, _ := tagValue(state, "refs/heads/feat"); v != feat {
		t.Fatalf("30618 after pushing feat: refs/heads/feat = %q; want %s", v, feat)
	}

	// bob, a relay member with no share of the repository, sees neither.
	cb := login(t, b.url, bob)
	if ev := repoEvent(t, cb, workspace.KindRepoState, d); ev != nil {
		t.Errorf("a member outside the repository read its 30618")
	}
	if ev := repoEvent(t, cb, workspace.KindRepoAnnouncement, d); ev != nil {
		t.Errorf("a member outside the repository read its 30617")
	}

	// Shared with a private channel bob is in: he sees both, with the
	// channel named; carol, outside it, still sees nothing.
	h := nostr.Tag{"h", chanA}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", bob.pk}))
	mustPublish(t, ca, signed(t, alice, workspace.KindRepoAnnouncement, "", nostr.Tag{"d", "proj"}, nostr.Tag{"description", "a test"}, nostr.Tag{workspace.TagRepoChannel, chanA}))
	ann = repoEvent(t, cb, workspace.KindRepoAnnouncement, d)
	if ann == nil {
		t.Fatal("a channel member cannot read the shared repository's 30617")
	}
	if v, _ := tagValue(ann, "h"); v != chanA {
		t.Errorf("shared 30617 h = %q; want %s", v, chanA)
	}
	if v, _ := tagValue(ann, "description"); v != "a test" {
		t.Errorf("shared 30617 description = %q", v)
	}
	if repoEvent(t, cb, workspace.KindRepoState, d) == nil {
		t.Error("a channel member cannot read the shared repository's 30618")
	}
	cc := login(t, b.url, carol)
	if repoEvent(t, cc, workspace.KindRepoAnnouncement, d) != nil || repoEvent(t, cc, workspace.KindRepoState, d) != nil {
		t.Error("a member outside the private channel read the repository's NIP-34 state")
	}

	for _, p := range nostrToolsParse(t, ann, state) {
		if !p.Valid {
			t.Errorf("nostr-tools: event %s does not verify", p.ID)
		}
		if p.Kind != "RepositoryAnnouncement" && p.Kind != "RepositoryState" {
			t.Errorf("nostr-tools names kind %s", p.Kind)
		}
	}
}

// TestNIP34AnnouncedOnStart: a repository that changed on disk while the
// built relay was down (as a push through another instance sharing the
// --git-dir, or a repository from before announcements) is announced as
// it is when the relay starts again; a start with nothing changed
// publishes nothing new.
func TestNIP34AnnouncedOnStart(t *testing.T) {
	needGit(t)
	alice := newKey(t)
	data := t.TempDir()
	// One address for every start: the clone URLs in the 30617 name it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"--owner", alice.pk, "--listen", addr}
	b := runBinary(t, data, args...)
	env := gitEnv(t)
	repoURL := b.http() + "/git/" + alice.pk + "/proj.git"
	d := alice.pk + "/proj"
	work := t.TempDir()
	gitOK(t, env, work, "init", "--quiet", "-b", "main")
	commitFile(t, env, work, "README", "hello\n", "first")
	gitOK(t, env, work, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "main")...)
	b.stop(t)

	// Behind the relay's back: a branch straight into the bare repository.
	bare := filepath.Join(data, "git", alice.pk, "proj.git")
	if _, err := os.Stat(bare); err != nil {
		t.Fatalf("the hosted repository is not where the relay keeps it: %v", err)
	}
	gitOK(t, env, work, "checkout", "--quiet", "-b", "side")
	side := commitFile(t, env, work, "S", "s\n", "side")
	gitOK(t, env, work, "push", "--quiet", bare, "side")

	b = runBinary(t, data, args...)
	ca := login(t, b.url, alice)
	var state *nostr.Event
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		state = repoEvent(t, ca, workspace.KindRepoState, d)
		if v, _ := tagValue(state, "refs/heads/side"); v == side {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30618 after a restart = %v; want refs/heads/side at %s", state.Tags, side)
		}
	}
	ann := repoEvent(t, ca, workspace.KindRepoAnnouncement, d)
	b.stop(t)

	// Nothing changed: the next start signs nothing new.
	b = runBinary(t, data, args...)
	ca = login(t, b.url, alice)
	time.Sleep(500 * time.Millisecond) // what the start would have published by now (it took ms above)
	if again := repoEvent(t, ca, workspace.KindRepoState, d); again.ID != state.ID {
		t.Errorf("a start with nothing changed re-signed the 30618: %s, was %s", again.ID, state.ID)
	}
	if again := repoEvent(t, ca, workspace.KindRepoAnnouncement, d); again.ID != ann.ID {
		t.Errorf("a start with nothing changed re-signed the 30617: %s, was %s", again.ID, ann.ID)
	}
}
