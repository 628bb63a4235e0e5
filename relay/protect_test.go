package relay

import (
	"strings"
	"testing"

	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// TestBranchProtection pushes with real git to the built relay: main may
// be created by the first push, but no later push may move or delete it,
// and git's output names the rule; other branches take pushes; the
// owner's announcement chooses what is protected.
func TestBranchProtection(t *testing.T) {
	needGit(t)
	alice := newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk)
	env := gitEnv(t)
	repoURL := b.http() + "/git/" + alice.pk + "/proj.git"
	w := t.TempDir()
	gitOK(t, env, w, "init", "--quiet", "-b", "main")
	commitFile(t, env, w, "README", "one\n", "first")
	gitOK(t, env, w, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "main")...)
	commitFile(t, env, w, "README", "two\n", "second")
	out, err := gitRun(t, env, w, append(authed(t, alice, repoURL), "push", repoURL, "main")...)
	if err == nil {
		t.Fatalf("push moving protected main succeeded:\n%s", out)
	}
	if !strings.Contains(out, "remote: branch protection: refs/heads/main is protected") || !strings.Contains(out, "protected branch") {
		t.Fatalf("refused push output does not name the rule:\n%s", out)
	}
	if out, err := gitRun(t, env, w, append(authed(t, alice, repoURL), "push", repoURL, ":main")...); err == nil {
		t.Fatalf("deleting protected main succeeded:\n%s", out)
	}
	gitOK(t, env, w, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "main:feat")...)

	// The owner lifts protection from main and puts it on release.
	ca := login(t, b.url, alice)
	mustPublish(t, ca, signed(t, alice, workspace.KindRepoAnnouncement, "", nostr.Tag{"d", "proj"}, nostr.Tag{workspace.TagRepoProtect, "release"}))
	gitOK(t, env, w, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "main")...)
	gitOK(t, env, w, append(authed(t, alice, repoURL), "push", "--quiet", repoURL, "HEAD~1:refs/heads/release")...)
	if out, err := gitRun(t, env, w, append(authed(t, alice, repoURL), "push", repoURL, "main:release")...); err == nil || !strings.Contains(out, "refs/heads/release is protected") {
		t.Fatalf("push moving protected release = %v:\n%s", err, out)
	}
}
