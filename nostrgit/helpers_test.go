package nostrgit

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/proc"
)

// Vectors of the nostrgit spec §5.6.
const (
	k3       = "0000000000000000000000000000000000000000000000000000000000000003"
	pk3      = "f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9"
	k1       = "0000000000000000000000000000000000000000000000000000000000000001"
	pk1      = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"
	payloadV = "tree 4b825dc642cb6eb9a060e54bf899d69f7cb46101\nauthor Test User <test@example.com> 1700000000 +0000\ncommitter Test User <test@example.com> 1700000000 +0000\n\nInitial commit"
	tV       = 1700000000
	hashV    = "a11a32173aa35125aaefaad8854f2eda5a144268a4a355905c841f79ff44aa18"
	sigV     = "c35062148d95b820068c18ab9cf69a8dd2322c606890366d084df7617570b96b7a1aca0a8fcabb2eb4032ebbdf5b43e6bf8633e0d85bcecce28a9e08705b875f"
	ownerSig = "54b97dfd2b7d61c1bc1b5facab9d12a991fe0ac3dcb9044b3176f63bebb6f67340eb0ad866f2d5568b78b58ba234ee9f490f8c41e64a949c200315801520ed25"
	hashOAV  = "b61f1658836a4f63a2d2f5d621014a064435dde0765dd9c1dc79c9530fe879f0"
	sigOAV   = "15592857980b8656ff50303d86acaffcbda397b9c0bb40aebd2fb87a723e466fdb1a74404d39f9eb7ac220b4f2e061f27523f1af24cbdf991cf42ff9b47034c0"
	authTagV = `["auth","` + pk1 + `","","` + ownerSig + `"]`
)

// needGit skips, loudly, when git is missing.
func needGit(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		t.Skip("SKIP(loud): git is not installed; apt-get install -y git")
	}
	return p
}

// gitEnviron is an environment where git reads no personal or system
// config: HOME and XDG_CONFIG_HOME in a temp dir, GIT_CONFIG_NOSYSTEM=1,
// and none of the key variables unless the test adds them.
func gitEnviron(t testing.TB, home string, extra ...string) []string {
	t.Helper()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"TMPDIR=" + home,
		"LANG=C",
		"GIT_AUTHOR_DATE=1700000000 +0000",
		"GIT_COMMITTER_DATE=1700000000 +0000",
	}
	return append(env, extra...)
}

// run runs an identity in-process and returns stdout, stderr and the code.
func run(t testing.TB, main func(context.Context, []string, proc.Env) int, env proc.Env, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	env.Stdin = strings.NewReader(stdin)
	env.Stdout, env.Stderr = &out, &errb
	code := main(t.Context(), args, env)
	return out.String(), errb.String(), code
}

// git runs git with env in dir and fails the test on error.
func gitCmd(t testing.TB, env []string, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(env, dir, "", args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func gitTry(env []string, dir, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Env, cmd.Dir = env, dir
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
