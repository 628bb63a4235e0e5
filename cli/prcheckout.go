package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"buzzbox/internal/workspace"
)

// maxGitOutput bounds what one git command run by pr checkout may print
// that the CLI keeps (for its answer and its error messages).
const maxGitOutput = 64 << 10

// cappedBuffer keeps the first maxGitOutput bytes written to it.
type cappedBuffer struct{ bytes.Buffer }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxGitOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// git runs git in the working directory with the command's environment
// (where an agent's session sets git-credential-nostr and git-sign-nostr)
// and returns its trimmed stdout.
func git(in *inv, args ...string) (string, error) {
	cmd := exec.CommandContext(in.ctx, "git", args...)
	cmd.Dir, cmd.Env = in.env.Dir, in.env.Environ
	var out, errOut cappedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.Is(err, exec.ErrNotFound) {
			return "", userErr("git is not installed; pr checkout needs git")
		}
		if errors.As(err, &ee) || errors.Is(err, context.Canceled) {
			return "", &Error{Category: catUser, Message: fmt.Sprintf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(errOut.String()))}
		}
		return "", otherErr("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out.String()), nil
}

// runPRCheckout fetches the pull request's head branch from the
// repository it names and switches to it in the git repository of the
// working directory: a new local branch of the same name (or --branch)
// tracking it, or, when that branch exists, a fast-forward of it. Local
// commits the head does not have are never dropped: git refuses, and
// the message says so.
func runPRCheckout(in *inv) error {
	pr, r, err := needPR(in)
	if err != nil {
		return err
	}
	head := tagValue(pr, workspace.TagBranchName)
	if head == "" || strings.HasPrefix(head, "-") {
		return otherErr("pull request %s names no head branch (branch-name tag %q)", pr.ID, head)
	}
	local := head
	if in.p.has("branch") {
		local = in.p.str("branch")
	}
	if local == "" || strings.HasPrefix(local, "-") {
		return userErr("--branch must be a branch name, got %q", local)
	}
	if _, err := git(in, "check-ref-format", "--branch", local); err != nil {
		return userErr("--branch %q is not a valid branch name", local)
	}
	url := tagValue(pr, workspace.TagRepoClone)
	if url == "" {
		url = tagValue(r.ann, workspace.TagRepoClone)
	}
	if url == "" {
		return otherErr("pull request %s and repository %s name no clone URL", pr.ID, r.d())
	}
	if _, err := git(in, "rev-parse", "--git-dir"); err != nil {
		return userErr("not in a git repository; clone it first: git clone %s && cd %s", url, r.name)
	}
	// A remote of this repository that already points there is used by
	// name, so the branch tracks it as any other; else the URL itself.
	remote := url
	if names, err := git(in, "remote"); err == nil {
		for _, n := range strings.Fields(names) {
			if u, err := git(in, "remote", "get-url", n); err == nil && strings.TrimSuffix(u, "/") == strings.TrimSuffix(url, "/") {
				remote = n
				break
			}
		}
	}
	if _, err := git(in, "fetch", "--quiet", remote, "refs/heads/"+head); err != nil {
		return err
	}
	tip, err := git(in, "rev-parse", "--verify", "FETCH_HEAD^{commit}")
	if err != nil {
		return err
	}
	_, exists := git(in, "rev-parse", "--verify", "--quiet", "refs/heads/"+local)
	created := exists != nil
	if created {
		if _, err := git(in, "switch", "--quiet", "-c", local, tip); err != nil {
			return err
		}
	} else {
		if _, err := git(in, "switch", "--quiet", local); err != nil {
			return err
		}
		if _, err := git(in, "merge", "--quiet", "--ff-only", tip); err != nil {
			return &Error{Category: catUser, Message: fmt.Sprintf("branch %s has commits the pull request's head %s lacks, or lacks its history: %s; "+
				"check out into another branch with --branch NAME", local, tip[:min(len(tip), 12)], err)}
		}
	}
	if _, err := git(in, "config", "branch."+local+".remote", remote); err != nil {
		return err
	}
	if _, err := git(in, "config", "branch."+local+".merge", "refs/heads/"+head); err != nil {
		return err
	}
	return writeJSON(in.out, map[string]any{"pr": pr.ID, "branch": local, "head": head, "tip": tip, "remote": remote, "created": created,
		"push": "git push " + remote + " HEAD:" + head})
}
