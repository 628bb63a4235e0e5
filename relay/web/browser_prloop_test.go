package web_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
)

// prPromptRE finds, in the prompt of a comment on a pull request, the
// pull request and the comment to answer.
var prPromptRE = regexp.MustCompile(`buzz pr comment --pr ([0-9a-f]{64}) --reply-to ([0-9a-f]{64})`)

// TestBrowserPullRequestLoop is the build loop end to end: the built
// `buzzbox up` with its agent (buzz-agent, buzz-dev-mcp) on a scripted
// model that works only through shell calls of git and buzz, and the
// owner in a real Chromium. Asked in #general, the agent clones the
// owner's repository (shared with #general), branches, commits (signed
// by git-sign-nostr), pushes (git-credential-nostr) and opens a pull
// request. The owner comments on a line of its diff in the browser; the
// agent is prompted with the file, the line and the hunk, checks the
// branch out with buzz pr checkout, pushes a fix to the same branch,
// answers in the thread and approves its own pull request. The page shows
// the answer; Merge is refused while only the author approved; the
// owner approves and merges in the browser. main then holds the agent's
// commits, every commit's signature verifies, and a direct push to main
// is refused.
func TestBrowserPullRequestLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs buzzbox up, git and a browser")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIP(loud): git is not installed; apt-get install -y git")
	}
	var (
		mu       sync.Mutex
		repoURL  string
		repo     string // OWNER/NAME
		prPrompt string // the model request that carried the line comment
	)
	model := llmtest.New(t)
	model.SetHandler(func(req map[string]any) llmtest.Reply {
		last := lastMessage(req)
		if afterTool(last) {
			return llmtest.Reply{Text: "done"}
		}
		mu.Lock()
		defer mu.Unlock()
		if m := prPromptRE.FindSubmatch(last); m != nil && strings.Contains(string(last), "[Pull request]") {
			prPrompt = string(last)
			pr, c := string(m[1]), string(m[2])
			return shellCall(strings.Join([]string{"set -e", "cd proj",
				"buzz pr checkout --pr " + pr,
				`printf 'fixed, and better\n' > FIX`,
				"git commit -q -am 'say it better'",
				"git push -q",
				"buzz pr comment --pr " + pr + " --reply-to " + c + " --body 'Reworded it.'",
				"buzz pr review --pr " + pr + " --approve --body 'mine'"}, "\n"))
		}
		if strings.Contains(string(last), "open a pull request") {
			return shellCall(strings.Join([]string{"set -e",
				"git clone -q " + repoURL + " proj", "cd proj",
				"git checkout -q -b fix",
				`printf 'fixed\n' > FIX`,
				"git add FIX",
				"git commit -q -m 'fix it'",
				"git push -q origin fix",
				"buzz pr create --repo " + repo + " --head fix --title 'Fix it' --body 'Adds FIX.'"}, "\n"))
		}
		return llmtest.Reply{Text: "nothing to do"}
	})
	w := startUp(t, model)

	// The owner's key, where up keeps it, makes and shares the repository.
	keys, _ := filepath.Glob(filepath.Join(w.home, "state", "buzzbox", "*", "owner.key"))
	agentKeys, _ := filepath.Glob(filepath.Join(w.home, "state", "buzzbox", "*", "agent.key"))
	if len(keys) != 1 || len(agentKeys) != 1 {
		t.Fatalf("owner keys %v, agent keys %v; want one each", keys, agentKeys)
	}
	ownerSec, err := nostrkey.ReadFile(keys[0], nostrkey.FileRules{})
	if err != nil {
		t.Fatal(err)
	}
	agentSec, err := nostrkey.ReadFile(agentKeys[0], nostrkey.FileRules{})
	if err != nil {
		t.Fatal(err)
	}
	ownerHexB, _ := ownerSec.AppendHex(nil)
	ownerSK, ownerPK, agentPK := string(ownerHexB), ownerSec.Public().Hex(), agentSec.Public().Hex()
	mu.Lock()
	repoURL, repo = "http://"+w.addr+"/git/"+ownerPK+"/proj.git", ownerPK+"/proj"
	mu.Unlock()

	// git as a session runs it: credential helper and signing program
	// are this executable, the key in the environment.
	bin := t.TempDir()
	for _, name := range []string{"git-credential-nostr", "git-sign-nostr"} {
		if err := os.Symlink(testexe.Path(t), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "NOSTR_PRIVATE_KEY=" + ownerSK,
		"GIT_AUTHOR_NAME=Owner", "GIT_AUTHOR_EMAIL=owner@x", "GIT_COMMITTER_NAME=Owner", "GIT_COMMITTER_EMAIL=owner@x"}
	for i, kv := range [][2]string{{"credential.helper", "nostr"}, {"credential.useHttpPath", "true"}, {"gpg.format", "x509"},
		{"gpg.x509.program", "git-sign-nostr"}, {"commit.gpgSign", "true"}, {"user.signingkey", ownerPK}} {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	env = append(env, "GIT_CONFIG_COUNT=6")
	git := func(dir string, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	mustGit := func(dir string, args ...string) string {
		t.Helper()
		out, err := git(dir, args...)
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	work := t.TempDir()
	mustGit(work, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(work, "README"), []byte("proj\n"), 0o644)
	mustGit(work, "add", "README")
	mustGit(work, "commit", "-q", "-m", "first")
	mustGit(work, "push", "-q", repoURL, "main")
	p := newPeer(t, "ws://"+w.addr)
	p.sk, p.pk = ownerSK, ownerPK
	p.auth()
	p.publish(30617, "", nostr.Tag{"d", "proj"}, nostr.Tag{"buzz-channel", w.channel})

	// The owner asks; the agent opens a pull request, shown in #general.
	owner, ownerErrors := signInOwner(t, w)
	mentionAgent(t, owner, "Message #general", "please open a pull request adding FIX")
	waitJS(t, owner, "the pull request's card", textIn("#feed .pr-card", "Fix it")+` && `+textIn("#feed .pr-card", "fix → main"))
	do(t, owner, "open it", chromedp.Click(button("View pull request")))
	waitJS(t, owner, "its diff", `!!document.querySelector('dialog.pr-page[open] .pr-lines[data-path="FIX"] .dl[data-line="1"]')`)

	// A comment on line 1 reaches the agent with the file, the line and the hunk.
	do(t, owner, "click line 1", chromedp.Click(labelled("Comment on FIX line 1: fixed")))
	do(t, owner, "comment", chromedp.SendKeys(labelled("Comment on FIX line 1"), "say it better"),
		chromedp.Click(chromedp.Search(`//form[contains(@class,'pr-newcomment')]//button[@type='submit']`)))
	thread := `document.querySelector('dialog.pr-page .pr-lines[data-path="FIX"] .dl[data-line="1"] + details.pr-thread')`
	waitJS(t, owner, "the agent's answer in the line's thread", `!!`+thread+` && `+thread+`.textContent.includes('Reworded it.')`)
	mu.Lock()
	got := prPrompt
	mu.Unlock()
	for _, want := range []string{"File: FIX", "Line: 1", `→ +fixed`, "@@ -0,0 +1 @@", "buzz pr checkout --pr"} {
		if !strings.Contains(got, want) {
			t.Errorf("the model request for the comment lacks %q:\n%s", want, got)
		}
	}
	fixTip := strings.Fields(mustGit(work, "ls-remote", repoURL, "refs/heads/fix"))[0]
	waitJS(t, owner, "the new tip on the page, its diff read again", textIn("dialog.pr-page .pr-meta", "tip "+fixTip[:7])+` && `+
		textIn("dialog.pr-page .pr-lines .dl.add", "+fixed, and better")+` && `+thread+`.textContent.includes('Reworded it.')`)

	// The agent's own approval does not count; the owner's does. The
	// agent approves after it answers, so the page shows its approval
	// before Merge is pressed (else the refusal names no approval at all).
	approvals := `document.querySelectorAll('dialog.pr-page .pr-conversation .pr-comment[data-review=approve]').length`
	waitJS(t, owner, "the agent's own approval", approvals+` === 1`)
	uncounted := `[...document.querySelectorAll('dialog.pr-page .pr-conversation .pr-comment[data-review=approve][data-counts=no]')]`
	waitJS(t, owner, "the author's own approval marked as not counting", uncounted+`.length === 1 && `+uncounted+`[0].textContent.includes('does not count: the author’s own')`)
	do(t, owner, "merge too early", chromedp.Click(button("Merge")))
	waitJS(t, owner, "refused: only the author approved", textIn("dialog.pr-page .pr-result", "(the author)"))
	do(t, owner, "approve", chromedp.Click(button("Approve")))
	waitJS(t, owner, "the owner's approval beside the agent's, counting", approvals+` === 2 && `+uncounted+`.length === 1`)
	do(t, owner, "merge", chromedp.Click(button("Merge")))
	waitJS(t, owner, "merged", textIn("dialog.pr-page .pr-result", "Merged (fast-forward) as "+fixTip[:7]))
	shot(t, owner, t.TempDir(), "pr-loop-merged")

	// main has the agent's commits, and every signature verifies.
	if main := strings.Fields(mustGit(work, "ls-remote", repoURL, "refs/heads/main"))[0]; main != fixTip {
		t.Fatalf("main = %s after the merge; want the pull request's tip %s", main, fixTip)
	}
	mustGit(work, "pull", "-q", "--ff-only", repoURL, "main")
	commits := strings.Fields(mustGit(work, "rev-list", "HEAD"))
	if len(commits) != 3 {
		t.Errorf("main holds %d commits; want 3 (first, fix it, say it better)", len(commits))
	}
	for _, c := range commits {
		if out, err := git(work, "verify-commit", c); err != nil || !strings.Contains(out, "Good signature") {
			t.Errorf("git verify-commit %s: %v\n%s", c, err, out)
		}
	}
	for _, c := range commits[:len(commits)-1] {
		if signer := mustGit(work, "log", "-1", "--format=%GK", c); signer != agentPK {
			t.Errorf("commit %s signed by %s; want the agent %s", c, signer, agentPK)
		}
	}

	// A direct push to main is refused, with the rule named.
	os.WriteFile(filepath.Join(work, "README"), []byte("straight to main\n"), 0o644)
	mustGit(work, "commit", "-q", "-am", "straight")
	if out, err := git(work, "push", repoURL, "HEAD:main"); err == nil || !strings.Contains(out, "protected") {
		t.Errorf("a direct push to main: %v\n%s", err, out)
	}
	refusals := 0
	for _, e := range ownerErrors() {
		if strings.Contains(e, "status of 403") && refusals == 0 {
			refusals++ // the early merge, refused as it should be
			continue
		}
		t.Errorf("browser console: %s", e)
	}
}
