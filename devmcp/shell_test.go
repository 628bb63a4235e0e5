package devmcp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"buzzbox/internal/testexe"
)

// shellOut is the shell tool's result body.
type shellOut struct {
	DurationMS      int64    `json:"duration_ms"`
	ExitCode        int      `json:"exit_code"`
	Notes           []string `json:"notes"`
	Stderr          string   `json:"stderr"`
	StderrArtifact  *string  `json:"stderr_artifact"`
	StderrTruncated bool     `json:"stderr_truncated"`
	Stdout          string   `json:"stdout"`
	StdoutArtifact  *string  `json:"stdout_artifact"`
	StdoutTruncated bool     `json:"stdout_truncated"`
	TimedOut        bool     `json:"timed_out"`
}

func runShell(t *testing.T, p *mcpProc, args map[string]any) shellOut {
	t.Helper()
	res := p.tool("shell", args)
	txt := okText(t, res)
	var out shellOut
	if err := json.Unmarshal([]byte(txt), &out); err != nil {
		t.Fatalf("shell result %q is not JSON: %v", txt, err)
	}
	sc, _ := json.Marshal(res["structuredContent"])
	var structured shellOut
	if err := json.Unmarshal(sc, &structured); err != nil || structured.ExitCode != out.ExitCode || structured.Stdout != out.Stdout {
		t.Errorf("structuredContent %s does not match the text %s", sc, txt)
	}
	return out
}

func TestShellEcho(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	res := p.tool("shell", map[string]any{"command": "echo hello"})
	txt := okText(t, res)
	keys := regexp.MustCompile(`(?m)^  "([a-z_]+)":`).FindAllStringSubmatch(txt, -1)
	var names []string
	for _, k := range keys {
		names = append(names, k[1])
	}
	want := "duration_ms exit_code notes stderr stderr_truncated stdout stdout_truncated timed_out"
	if strings.Join(names, " ") != want {
		t.Errorf("result keys = %v; want %s in that order", names, want)
	}
	out := runShell(t, p, map[string]any{"command": "echo hello"})
	if out.ExitCode != 0 || out.Stdout != "hello\n" || out.TimedOut || out.StdoutTruncated || out.StderrTruncated || out.StdoutArtifact != nil || out.StderrArtifact != nil || out.Notes == nil {
		t.Errorf("echo hello = %+v", out)
	}
	if out := runShell(t, p, map[string]any{"command": "echo oops >&2; exit 3"}); out.ExitCode != 3 || out.Stderr != "oops\n" {
		t.Errorf("exit 3 = %+v; want a success result with exit_code 3", out)
	}
	if out := runShell(t, p, map[string]any{"command": "kill -9 $$"}); out.ExitCode != -1 {
		t.Errorf("killed by a signal: exit_code %d; want -1", out.ExitCode)
	}
	if out := runShell(t, p, map[string]any{"command": "cat"}); out.ExitCode != 0 || out.Stdout != "" {
		t.Errorf("cat with empty stdin = %+v", out)
	}
	if out := runShell(t, p, map[string]any{"command": "true", "timeout_ms": 10_000_000}); out.ExitCode != 0 || out.TimedOut {
		t.Errorf("huge timeout = %+v; want clamped and fine", out)
	}
	dir := t.TempDir()
	if out := runShell(t, p, map[string]any{"command": "pwd", "workdir": dir}); out.Stdout != dir+"\n" {
		t.Errorf("pwd in %s = %q", dir, out.Stdout)
	}
}

func TestShellArgumentErrors(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	got := errText(t, p.tool("shell", map[string]any{"command": strings.Repeat(":", 1_000_001)}))
	if !strings.Contains(got, "1000000 byte limit") {
		t.Errorf("long command = %q", got)
	}
	got = errText(t, p.tool("shell", map[string]any{"command": "true", "workdir": "/no/such/dir"}))
	if !strings.Contains(got, "/no/such/dir") {
		t.Errorf("bad workdir = %q; want it named", got)
	}
}

func TestShellTimeoutKillsGrandchildren(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	pidFile := filepath.Join(t.TempDir(), "pids")
	start := time.Now()
	// The subshell and its sleep hold the output pipes; only a group kill
	// lets the call end.
	out := runShell(t, p, map[string]any{
		"command":    "(sleep 1000; echo never) & echo $! > " + pidFile + "; sleep 1000",
		"timeout_ms": 1500, // long enough for a loaded machine to write the pid file
	})
	if !out.TimedOut || out.ExitCode != 124 {
		t.Errorf("timeout = %+v; want timed_out and exit_code 124", out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timed-out call took %v; want the timeout plus well under a few seconds", d)
	}
	waitGone(t, readPids(t, pidFile))
}

func TestShellBackgroundJobDoesNotOutliveCall(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	// Nothing left behind: the group is not signalled, so no grace period
	// is spent (upstream waited 200 ms after every call).
	runShell(t, p, map[string]any{"command": "echo hi"})
	out := runShell(t, p, map[string]any{"command": "sleep 30 & echo $!"})
	pid, err := strconv.Atoi(strings.TrimSpace(out.Stdout))
	if err != nil {
		t.Fatalf("stdout %q", out.Stdout)
	}
	if out.DurationMS > 5000 {
		t.Errorf("call took %d ms; want prompt", out.DurationMS)
	}
	waitGone(t, []int{pid})
	p.waitLog("stopping processes left in the group")
	// stderr is ordered, so by now a line from the first call would be in.
	if n := strings.Count(p.stderrText(), "stopping processes left in the group"); n != 1 {
		t.Errorf("group stopped %d times; want only for the call that left a job running", n)
	}
}

func TestShellEnvironment(t *testing.T) {
	p := startServer(t, startOpts{env: []string{"NOSTR_PRIVATE_KEY=" + strings.Repeat("1", 64), "BUZZ_PRIVATE_KEY=kept"}})
	p.initialize("2025-11-25")
	out := runShell(t, p, map[string]any{"command": "echo nostr=${NOSTR_PRIVATE_KEY-unset} buzz=${BUZZ_PRIVATE_KEY-unset}"})
	if out.Stdout != "nostr=unset buzz=kept\n" {
		t.Errorf("child environment: %q; want NOSTR_PRIVATE_KEY unset and BUZZ_PRIVATE_KEY kept", out.Stdout)
	}
}

func TestShellTruncationAndArtifacts(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	out := runShell(t, p, map[string]any{"command": "head -c 60000 /dev/zero | tr '\\0' 'a'"})
	if !out.StdoutTruncated || out.StdoutArtifact == nil {
		t.Fatalf("60000 bytes: truncated=%v artifact=%v; want truncated with an artifact", out.StdoutTruncated, out.StdoutArtifact)
	}
	if !strings.HasPrefix(out.Stdout, "[truncated: showing last 8192 bytes; 60000 bytes captured / ") {
		t.Errorf("notice = %q", out.Stdout[:min(len(out.Stdout), 120)])
	}
	art := *out.StdoutArtifact
	if filepath.Base(art) != "000001.stdout.txt" || filepath.Base(filepath.Dir(art)) != "artifacts" ||
		!strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(art))), "buzz-dev-mcp-session-") {
		t.Errorf("first artifact = %s; want <session>/artifacts/000001.stdout.txt", art)
	}
	if b, err := os.ReadFile(art); err != nil || len(b) != 60000 {
		t.Errorf("artifact holds %d bytes (%v); want 60000", len(b), err)
	}
	if out := runShell(t, p, map[string]any{"command": "seq 2000 | sed 's/.*/x/'"}); out.StdoutTruncated {
		t.Errorf("2000 lines truncated")
	}
	if out := runShell(t, p, map[string]any{"command": "seq 2001 | sed 's/.*/x/'"}); !out.StdoutTruncated {
		t.Errorf("2001 lines not truncated")
	}
	out = runShell(t, p, map[string]any{"command": "for i in $(seq 30000); do printf 'é'; done; echo >&2 err"})
	tail := out.Stdout[strings.Index(out.Stdout, "]\n")+2:]
	if !utf8.ValidString(tail) || strings.ContainsRune(tail, utf8.RuneError) || !strings.HasPrefix(tail, "é") {
		t.Errorf("tail starts inside a UTF-8 sequence: %q", tail[:10])
	}
	if out.Stderr != "err\n" || out.StderrTruncated {
		t.Errorf("stderr = %q truncated=%v", out.Stderr, out.StderrTruncated)
	}
	for range 10 {
		runShell(t, p, map[string]any{"command": "seq 30000"})
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(art), "*.txt"))
	if len(files) != 8 {
		t.Errorf("artifacts after many truncating calls: %d files %v; want the 8 newest", len(files), files)
	}
	if _, err := os.Stat(art); err == nil {
		t.Errorf("oldest artifact %s still exists", art)
	}
}

func TestShellLargeOutputBoundedMemory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 1 GiB; skipped in -short mode")
	}
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	out := runShell(t, p, map[string]any{"command": "head -c 1073741824 /dev/zero; echo done >&2", "timeout_ms": 300000})
	if !out.StdoutTruncated || out.StdoutArtifact == nil || out.Stderr != "done\n" {
		t.Fatalf("1 GiB: truncated=%v artifact=%v stderr=%q", out.StdoutTruncated, out.StdoutArtifact, out.Stderr)
	}
	defer os.Remove(*out.StdoutArtifact)
	if st, err := os.Stat(*out.StdoutArtifact); err != nil || st.Size() != 1<<30 {
		t.Errorf("artifact size %v (%v); want the whole 1 GiB stream", st, err)
	}
	if !strings.Contains(out.Stdout, "1073741824 bytes captured") || !strings.Contains(out.Stdout, "1073741824 bytes total") {
		t.Errorf("notice = %q", out.Stdout[:200])
	}
	if hwm := peakRSS(t, p.cmd.Process.Pid); hwm > 48<<20 {
		t.Errorf("server peak RSS %d MiB; want at most 48 MiB", hwm>>20)
	} else {
		t.Logf("server peak RSS after 1 GiB of output: %.1f MiB", float64(hwm)/(1<<20))
	}
}

// TestShellCancel cancels a running call: its process group dies at once,
// no reply is sent for it, and the server goes on serving.
func TestShellCancel(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	pidFile := filepath.Join(t.TempDir(), "pids")
	id, reply := p.request("tools/call", map[string]any{
		"name":      "shell",
		"arguments": map[string]any{"command": "sleep 1000 & echo $! > " + pidFile + "; echo $$ >> " + pidFile + "; wait"},
		"_meta":     map[string]any{"progressToken": "tok-1"},
	})
	p.waitNote("progress for the running call", func(m map[string]any) bool {
		pr, _ := m["params"].(map[string]any)
		return m["method"] == "notifications/progress" && pr["progressToken"] == "tok-1"
	})
	pids := waitPids(t, pidFile, 2)
	start := time.Now()
	p.sendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.Itoa(id) + `,"reason":"test"}}`)
	waitGone(t, pids)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("group died %v after the cancel; want at once", d)
	}
	if r := p.call("ping", nil); r["error"] != nil {
		t.Fatalf("ping after cancel = %v", r)
	}
	// The cancelled call ended without a reply: a shell call made after it
	// completes, and the log says the call was cancelled.
	runShell(t, p, map[string]any{"command": "true"})
	select {
	case m := <-reply:
		t.Errorf("cancelled request got a reply: %v", m)
	default:
	}
	p.waitLog("msg=cancelled")
}

func TestShellProgress(t *testing.T) {
	t.Parallel()
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	_, reply := p.request("tools/call", map[string]any{
		"name": "shell", "arguments": map[string]any{"command": "sleep 4"}, "_meta": map[string]any{"progressToken": 99},
	})
	var last float64
	for range 2 {
		m := p.waitNote("progress", func(m map[string]any) bool {
			pr, _ := m["params"].(map[string]any)
			v, _ := pr["progress"].(float64)
			return m["method"] == "notifications/progress" && pr["progressToken"] == float64(99) && v > last
		})
		last = m["params"].(map[string]any)["progress"].(float64)
	}
	if r := p.await(reply, "sleep 4"); r["error"] != nil {
		t.Errorf("call with progress = %v", r)
	}
}

// TestShellEscapedDescendant: a process that leaves the group but keeps the
// output pipe cannot hang the call; the reader gives up and says so.
func TestShellEscapedDescendant(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("SKIP(loud): setsid (util-linux) not installed")
	}
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	pidFile := filepath.Join(t.TempDir(), "pids")
	out := runShell(t, p, map[string]any{"command": "setsid sh -c 'echo $$ > " + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile + "; exec sleep 1000' & " +
		// Wait until the escape happened (the pid is written after setsid).
		"while [ ! -s " + pidFile + " ]; do sleep 0.01; done; echo visible"})
	t.Cleanup(func() {
		for _, pid := range readPids(t, pidFile) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if !strings.Contains(strings.Join(out.Notes, "\n"), "stdout reader did not complete") {
		t.Errorf("notes = %v; want the stdout reader note", out.Notes)
	}
	if out.Stdout != "visible\n" {
		t.Errorf("stdout = %q; want what was read before giving up", out.Stdout)
	}
}

// readPids reads whitespace-separated pids from a file the command wrote.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %q", b)
		}
		pids = append(pids, n)
	}
	return pids
}

// waitPids waits until the command has written n pids to path.
func waitPids(t *testing.T, path string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(strings.Fields(string(b))) >= n {
			return readPids(t, path)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %d pids", path, n)
		}
		time.Sleep(10 * time.Millisecond) // another process writes the file; nothing to wait on
	}
}

// waitGone waits until none of pids is a live process (zombies count as
// gone), failing after 10s.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still alive", pid)
			}
			time.Sleep(10 * time.Millisecond) // polling another process's state; nothing to wait on
		}
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// peakRSS returns the peak resident set size of a process (VmHWM).
func peakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("SKIP(loud): cannot read /proc/%d/status: %v", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Skip("SKIP(loud): no VmHWM in /proc status")
	return 0
}

// TestShimAndCleanup: shell children see the session shim first on PATH,
// with rg resolving into it and git configured from the key; on stdin EOF
// the server removes the shim dir and the session dir.
func TestShimAndCleanup(t *testing.T) {
	tmp := t.TempDir()
	key := strings.Repeat("0", 63) + "3"
	p := startServer(t, startOpts{tmp: tmp, env: []string{"NOSTR_PRIVATE_KEY=" + key, "BUZZ_RELAY_URL=wss://relay.example.com:443/x"}})
	p.initialize("2025-11-25")
	out := runShell(t, p, map[string]any{"command": `echo "$PATH"; command -v rg; echo "$GIT_CONFIG_COUNT"; git config user.email 2>/dev/null || echo no-git; echo "${NOSTR_PRIVATE_KEY-unset}"`})
	lines := strings.Split(strings.TrimSuffix(out.Stdout, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("stdout %q", out.Stdout)
	}
	shimDir, _, _ := strings.Cut(lines[0], ":")
	if filepath.Dir(shimDir) != tmp || !strings.HasPrefix(filepath.Base(shimDir), "buzz-dev-mcp-") {
		t.Errorf("PATH starts with %q; want the shim dir in %s", shimDir, tmp)
	}
	if lines[1] != filepath.Join(shimDir, "rg") {
		t.Errorf("rg resolves to %q; want the shim link", lines[1])
	}
	if lines[2] != "10" {
		t.Errorf("GIT_CONFIG_COUNT = %q; want 10", lines[2])
	}
	if lines[3] != "no-git" && !strings.HasSuffix(lines[3], "@relay.example.com") {
		t.Errorf("git user.email = %q", lines[3])
	}
	if lines[4] != "unset" {
		t.Errorf("NOSTR_PRIVATE_KEY reached the child")
	}
	if st, err := os.Stat(filepath.Join(shimDir, ".nostr-key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", st, err)
	}
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("server did not exit on stdin EOF")
	}
	p.cmd.Wait()
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("temp dir after exit holds %v; want the shim and session dirs removed", names)
	}
}

// TestEmptyRoot runs the static binary chrooted into a directory that
// holds nothing but itself: no shell, no /proc, no /dev. The shell tool
// answers with an isError naming what it looked for; the file tools work.
func TestEmptyRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP(loud): chroot needs root; run the tests as root (CI does) to cover the empty-root case")
	}
	root := t.TempDir()
	data, err := os.ReadFile(testexe.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "buzz-dev-mcp"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"tmp", "work"} {
		os.Mkdir(filepath.Join(root, d), 0o777)
	}
	writeFile(t, filepath.Join(root, "work", "notes.txt"), "inside the root\n")
	cmd := exec.Command("/buzz-dev-mcp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	cmd.Dir = "/work"
	cmd.Env = []string{"PATH=/bin:/usr/bin", "TMPDIR=/tmp"}
	p := startCmd(t, cmd)
	instr := p.initialize("2025-11-25")["instructions"].(string)
	if !strings.Contains(instr, "Shell: none found") {
		t.Errorf("instructions = %q", instr)
	}
	got := errText(t, p.tool("shell", map[string]any{"command": "echo hi"}))
	for _, want := range []string{"no shell found", "bash in PATH", "/bin/sh", "BUZZ_SHELL"} {
		if !strings.Contains(got, want) {
			t.Errorf("shell in an empty root = %q; want it to name %q", got, want)
		}
	}
	if got := okText(t, p.tool("read_file", map[string]any{"path": "notes.txt"})); got != "notes.txt (lines 1-1 of 1)\n1:inside the root\n" {
		t.Errorf("read_file in an empty root = %q", got)
	}
	okText(t, p.tool("str_replace", map[string]any{"path": "notes.txt", "old_str": "inside", "new_str": "within"}))
	okText(t, p.tool("todo", map[string]any{}))
}
