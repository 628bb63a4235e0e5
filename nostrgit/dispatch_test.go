package nostrgit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"
)

// TestDispatch drives the real buzzbox executable under the helpers' names,
// which is how git finds them.
func TestDispatch(t *testing.T) {
	exe := testexe.Path(t)
	dir := t.TempDir()
	sign := filepath.Join(dir, "git-sign-nostr")
	cred := filepath.Join(dir, "Git-Credential-Nostr.exe")
	for _, l := range []string{sign, cred} {
		if err := os.Symlink(exe, l); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(sign)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || out.Len() != 0 || !strings.HasPrefix(errb.String(), "error: ") {
		t.Errorf("git-sign-nostr without args: %v, stdout %q, stderr %q", err, out.String(), errb.String())
	}
	cmd = exec.Command(cred, "get")
	cmd.Env = gitEnviron(t, t.TempDir(), "NOSTR_PRIVATE_KEY="+k3)
	cmd.Stdin = strings.NewReader(validRequest)
	got, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(got), "capability[]=authtype\nauthtype=Nostr\ncredential=") {
		t.Errorf("Git-Credential-Nostr.exe get: %v\n%s", err, got)
	}

	// And through git, with the real executable as the signer.
	r := newRepo(t, exe)
	if out, err := r.try(withK3, "commit", "--allow-empty", "-S", "-m", "real"); err != nil {
		t.Fatalf("git commit -S with the real executable: %v\n%s", err, out)
	}
	if got := r.git("log", "-1", "--format=%G?"); got != "G\n" {
		t.Errorf("%%G? = %q; want G", got)
	}
}

// benchGit times one git command per iteration and reports the median
// wall time, which the targets are stated in, and the median CPU
// time of git and the children it waited for (the signer), which a loaded
// machine distorts less.
func benchGit(b *testing.B, r *repo, extra []string, args func(i int) []string) {
	b.Helper()
	var wall, cpu []time.Duration
	for b.Loop() {
		cmd := exec.Command("git", args(len(wall))...)
		cmd.Env = append(append([]string{}, r.env...), extra...)
		cmd.Dir = r.dir
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", cmd.Args, err, out)
		}
		wall = append(wall, time.Since(start))
		cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	slices.Sort(wall)
	slices.Sort(cpu)
	b.ReportMetric(float64(wall[len(wall)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds())/1000, "median-cpu-ms")
}

// BenchmarkGitCommit compares `git commit` unsigned with `git commit -S`
// through the real executable; the difference of the medians is the
// signing overhead (target ≤ 10 ms).
func BenchmarkGitCommit(b *testing.B) {
	exe := testexe.Path(b)
	for _, mode := range []struct {
		name string
		flag []string
	}{{"unsigned", nil}, {"signed", []string{"-S"}}} {
		b.Run(mode.name, func(b *testing.B) {
			r := newRepo(b, exe)
			benchGit(b, r, withK3, func(int) []string {
				return append([]string{"commit", "-q", "--allow-empty", "-m", "bench"}, mode.flag...)
			})
		})
	}
}

// BenchmarkGitVerifyCommit times `git verify-commit HEAD` on a signed
// commit (target ≤ 10 ms median): with user.signingkey in the repository's
// config (the verifier asks git for it) and under the session env (it reads
// GIT_CONFIG_* and starts no git).
func BenchmarkGitVerifyCommit(b *testing.B) {
	exe := testexe.Path(b)
	b.Run("repo-config", func(b *testing.B) {
		r := newRepo(b, exe)
		if out, err := r.try(withK3, "commit", "-q", "--allow-empty", "-S", "-m", "bench"); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		benchGit(b, r, nil, func(int) []string { return []string{"verify-commit", "HEAD"} })
	})
	b.Run("session-env", func(b *testing.B) {
		r := newRepo(b, exe, sessionEnv(b, k3)...)
		r.git("config", "--unset", "user.signingkey")
		if out, err := r.try(nil, "commit", "-q", "--allow-empty", "-m", "bench"); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		benchGit(b, r, nil, func(int) []string { return []string{"verify-commit", "HEAD"} })
	})
}
