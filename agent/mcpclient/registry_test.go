package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"buzzbox/agent/mcpclient/mcptest"
)

func TestMain(m *testing.M) {
	if os.Getenv(mcptest.EnvSwitch) == "1" {
		os.Exit(mcptest.Main(os.Stdin, os.Stdout, os.Environ()))
	}
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines started by buzzbox outlived the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines waits briefly for goroutines created by our code to end
// and returns the stacks of those that did not.
func leakedGoroutines() string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var ours []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			// proc's spawner lives as long as the process, by design.
			if strings.Contains(g, "created by buzzbox/") && !strings.Contains(g, "buzzbox/internal/proc.spawnLoop") {
				ours = append(ours, g)
			}
		}
		if len(ours) == 0 || time.Now().After(deadline) {
			return strings.Join(ours, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeSpec returns a spec that runs this test binary as the fake server.
func fakeSpec(t testing.TB, name string, env ...string) Spec {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sp := Spec{Name: name, Command: exe, Env: [][2]string{{mcptest.EnvSwitch, "1"}}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		sp.Env = append(sp.Env, [2]string{k, v})
	}
	return sp
}

func testOpts(t testing.TB) Options {
	return Options{
		Cwd: t.TempDir(), Environ: append(os.Environ(), "ANTHROPIC_API_KEY=secret", "HOME=/home/test"),
		Stderr:      tWriter{t},
		InitTimeout: 2 * time.Second, RestartMax: 3, RestartBase: 10 * time.Millisecond, RestartCap: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil)),
	}
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func newRegistry(t *testing.T, opts Options, specs ...Spec) *Registry {
	t.Helper()
	r, err := New(context.Background(), specs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func resultText(r *Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func TestRegistryCallsTools(t *testing.T) {
	r := newRegistry(t, testOpts(t), fakeSpec(t, "fake", "FAKE_MCP_PAGED=1", "FAKE_MCP_STOP_HOOK=1"))
	names := map[string]bool{}
	for _, ti := range r.Tools() {
		names[ti.Name] = true
	}
	if !names["fake__echo"] || !names["fake__image"] || names["fake___Stop"] {
		t.Fatalf("tools = %v; want paged list without hooks", names)
	}
	res, err := r.Call(context.Background(), "fake__echo", json.RawMessage(`{"text":"hi"}`), time.Second)
	if err != nil || resultText(res) != "hi" {
		t.Fatalf("echo = %v, %v", res, err)
	}
	if _, err := r.Call(context.Background(), "fake___Stop", nil, time.Second); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("calling a hook = %v; want unknown tool", err)
	}
	var ce *CallError
	if _, err := r.Call(context.Background(), "fake__reject", nil, time.Second); !errors.As(err, &ce) || ce.Kind != CallRejected {
		t.Errorf("reject = %v; want CallRejected", err)
	}
	// A rejected call leaves the server healthy.
	if _, err := r.Call(context.Background(), "fake__echo", nil, time.Second); err != nil {
		t.Errorf("after reject: %v", err)
	}
}

func TestChildEnvWhitelist(t *testing.T) {
	opts := testOpts(t)
	opts.Environ = append(opts.Environ, "BUZZ_CLI=/opt/buzz")
	r := newRegistry(t, opts, fakeSpec(t, "fake", "EXTRA=yes"))
	for key, want := range map[string]string{"ANTHROPIC_API_KEY": "", "HOME": "/home/test", "EXTRA": "yes", "BUZZ_CLI": "/opt/buzz"} {
		res, err := r.Call(context.Background(), "fake__getenv", json.RawMessage(fmt.Sprintf(`{"text":%q}`, key)), time.Second)
		if err != nil || resultText(res) != want {
			t.Errorf("child %s = %q, %v; want %q", key, resultText(res), err, want)
		}
	}
}

func TestMCPInitTimeoutKillsChild(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	opts := testOpts(t)
	opts.InitTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := New(context.Background(), []Spec{fakeSpec(t, "fake", "FAKE_MCP_HANG_INIT=1", "FAKE_MCP_PID_FILE="+pidFile)}, opts)
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("New = %v; want timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	assertGone(t, pidFile)
}

func assertGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
	// A killed process may linger as a zombie until its new parent reaps it;
	// that counts as gone. Allow the kernel a moment to deliver SIGKILL.
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Errorf("process %d still alive", pid)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Field 3, after the parenthesised command name, is the state.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func TestCapsAndNames(t *testing.T) {
	opts := testOpts(t)
	var many []Spec
	for i := 0; i < 17; i++ {
		many = append(many, fakeSpec(t, fmt.Sprintf("s%d", i)))
	}
	if _, err := New(context.Background(), many, opts); err == nil || !strings.Contains(err.Error(), "too many") {
		t.Errorf("17 servers = %v", err)
	}
	if _, err := New(context.Background(), []Spec{fakeSpec(t, "fake", "FAKE_MCP_TOOL_COUNT=129")}, opts); err == nil || !strings.Contains(err.Error(), "too many") {
		t.Errorf("129 tools = %v", err)
	}
	for _, bad := range []string{"a__b", "a.b", "a/b", "a b", ""} {
		if _, err := New(context.Background(), []Spec{fakeSpec(t, bad)}, opts); err == nil || !strings.Contains(err.Error(), "invalid server name") {
			t.Errorf("server %q = %v", bad, err)
		}
		if bad == "" {
			continue
		}
		if _, err := New(context.Background(), []Spec{fakeSpec(t, "fake", "FAKE_MCP_EXTRA_TOOL="+bad)}, opts); err == nil || !strings.Contains(err.Error(), "invalid tool name") {
			t.Errorf("tool %q = %v", bad, err)
		}
	}
	long := strings.Repeat("x", 60)
	if _, err := New(context.Background(), []Spec{fakeSpec(t, "fake", "FAKE_MCP_EXTRA_TOOL="+long)}, opts); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("long qualified name = %v", err)
	}
}

func TestDescriptionAndSchemaCaps(t *testing.T) {
	r := newRegistry(t, testOpts(t), fakeSpec(t, "fake", "FAKE_MCP_DESC_SIZE=5000", "FAKE_MCP_HUGE_SCHEMA=1"))
	for _, ti := range r.Tools() {
		if len(ti.Description) > maxDescriptionBytes || !strings.HasSuffix(ti.Description, "[truncated]") {
			t.Errorf("%s description %d bytes", ti.Name, len(ti.Description))
		}
		if string(ti.Schema) != "{}" {
			t.Errorf("%s schema = %s; want {}", ti.Name, ti.Schema)
		}
	}
}

func TestToolTimeoutKillsServerAndRestarts(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	r := newRegistry(t, testOpts(t), fakeSpec(t, "fake", "FAKE_MCP_PID_FILE="+pidFile))
	_, err := r.Call(context.Background(), "fake__slow", nil, 200*time.Millisecond)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != CallTimeout {
		t.Fatalf("slow = %v; want timeout", err)
	}
	assertGone(t, pidFile)
	// Tools stay visible while a restart is possible; the next call after
	// the backoff restarts the server.
	if len(r.Tools()) == 0 {
		t.Error("tools vanished after the first death")
	}
	waitBackoff(r)
	res, err := r.Call(context.Background(), "fake__echo", json.RawMessage(`{"text":"back"}`), time.Second)
	if err != nil || resultText(res) != "back" {
		t.Fatalf("after restart = %v, %v", res, err)
	}
}

func waitBackoff(r *Registry) {
	for _, s := range r.servers {
		s.mu.Lock()
		s.nextRetry = time.Time{}
		s.mu.Unlock()
	}
}

func TestDieMidCallThenExhausted(t *testing.T) {
	opts := testOpts(t)
	r := newRegistry(t, opts, fakeSpec(t, "fake"))
	_, err := r.Call(context.Background(), "fake__die", nil, 2*time.Second)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != CallUnavailable {
		t.Fatalf("die = %v; want unavailable", err)
	}
	// Before the backoff: recovering.
	s := r.servers[0]
	s.mu.Lock()
	s.nextRetry = time.Now().Add(time.Hour)
	s.mu.Unlock()
	if _, err := r.Call(context.Background(), "fake__echo", nil, time.Second); err == nil || !strings.Contains(err.Error(), "recovering") {
		t.Errorf("during backoff = %v", err)
	}
	// Make restarts fail: point the server at a command that does not exist.
	s.spec.Command = "/nonexistent/mcp"
	for i := 0; i < opts.RestartMax; i++ {
		waitBackoff(r)
		r.Call(context.Background(), "fake__echo", nil, time.Second)
	}
	if _, err := r.Call(context.Background(), "fake__echo", nil, time.Second); err == nil || !strings.Contains(err.Error(), "exhausted") {
		t.Errorf("after max restarts = %v", err)
	}
	if n := len(r.Tools()); n != 0 {
		t.Errorf("exhausted server still lists %d tools", n)
	}
}

func TestGrandchildKilledWithGroup(t *testing.T) {
	dir := t.TempDir()
	gpid := filepath.Join(dir, "gpid")
	r, err := New(context.Background(), []Spec{fakeSpec(t, "fake", "FAKE_MCP_SPAWN_GRANDCHILD=1", "FAKE_MCP_GRANDCHILD_PID_FILE="+gpid)}, testOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	assertGone(t, gpid)
}

func TestCancelSendsNotificationsCancelled(t *testing.T) {
	log := filepath.Join(t.TempDir(), "cancel")
	calls := filepath.Join(t.TempDir(), "calls")
	r := newRegistry(t, testOpts(t), fakeSpec(t, "fake", "FAKE_MCP_CANCEL_LOG="+log, "FAKE_MCP_CALL_RECEIVED="+calls))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := r.Call(ctx, "fake__slow", nil, 10*time.Second)
		done <- err
	}()
	waitFile(t, calls)
	cancel()
	err := <-done
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != CallCancelled {
		t.Fatalf("cancelled call = %v", err)
	}
	got := waitFile(t, log)
	recv, _ := os.ReadFile(calls)
	if id := strings.Fields(string(recv))[1]; strings.TrimSpace(got) != id {
		t.Errorf("cancel requestId = %q; tools/call id %q", got, id)
	}
	// The server is still usable.
	if _, err := r.Call(context.Background(), "fake__echo", nil, time.Second); err != nil {
		t.Errorf("after cancel: %v", err)
	}
}

// waitFile polls for a file to have content; the fake server writes it.
func waitFile(t *testing.T, p string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			return string(b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never written", p)
	return ""
}

func TestHookTargetsAllowlist(t *testing.T) {
	for _, tc := range []struct {
		allow []string
		want  int
	}{{nil, 0}, {[]string{"*"}, 1}, {[]string{"fake"}, 1}, {[]string{"*", "other"}, 0}, {[]string{"other"}, 0}} {
		opts := testOpts(t)
		opts.HookServers = tc.allow
		r := newRegistry(t, opts, fakeSpec(t, "fake", "FAKE_MCP_STOP_HOOK=1"))
		if got := len(r.HookTargets("_Stop")); got != tc.want {
			t.Errorf("allow %v: targets = %d; want %d", tc.allow, got, tc.want)
		}
	}
}

func TestHookSecondTimeoutKills(t *testing.T) {
	opts := testOpts(t)
	opts.HookServers = []string{"*"}
	r := newRegistry(t, opts, fakeSpec(t, "fake", "FAKE_MCP_STOP_HOOK=1", "FAKE_MCP_STOP_DELAY_MS=2000"))
	h := r.HookTargets("_Stop")[0]
	r.CallHook(context.Background(), h, 50*time.Millisecond)
	if r.servers[0].client == nil {
		t.Fatal("first hook timeout killed the server")
	}
	r.CallHook(context.Background(), h, 50*time.Millisecond)
	r.servers[0].mu.Lock()
	dead := r.servers[0].client == nil
	r.servers[0].mu.Unlock()
	if !dead {
		t.Error("second consecutive hook timeout left the server alive")
	}
}

// TestDualEraAgainstGoSDKStdio: the official Go SDK server answers
// server/discover, so the client runs the modern handshake-free protocol;
// our own fake answers -32601 and gets the legacy handshake.
func TestDualEraAgainstGoSDKStdio(t *testing.T) {
	r := newRegistry(t, testOpts(t), fakeSpec(t, "modern", "FAKE_MCP_GOSDK=1"), fakeSpec(t, "legacy"))
	if r.servers[0].client.meta == nil {
		t.Error("go-sdk server: legacy mode; want modern after server/discover")
	}
	if r.servers[1].client.meta != nil {
		t.Error("fake server: modern mode; want legacy")
	}
	res, err := r.Call(context.Background(), "modern__shout", json.RawMessage(`{"text":"hey"}`), 5*time.Second)
	if err != nil || resultText(res) != "hey!" {
		t.Fatalf("shout = %+v, %v", res, err)
	}
	if res, err := r.Call(context.Background(), "legacy__echo", json.RawMessage(`{"text":"old"}`), 5*time.Second); err != nil || resultText(res) != "old" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
}

func TestDeadServerLeavesOthersWorking(t *testing.T) {
	r := newRegistry(t, testOpts(t), fakeSpec(t, "a"), fakeSpec(t, "b"))
	if _, err := r.Call(context.Background(), "a__die", nil, 2*time.Second); err == nil {
		t.Fatal("die succeeded")
	}
	res, err := r.Call(context.Background(), "b__echo", json.RawMessage(`{"text":"still here"}`), time.Second)
	if err != nil || resultText(res) != "still here" {
		t.Fatalf("other server = %v, %v", res, err)
	}
}

func TestToolsListChangedRelists(t *testing.T) {
	r := newRegistry(t, testOpts(t), fakeSpec(t, "fake"))
	if _, err := r.Call(context.Background(), "fake__shrink", nil, time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.Has("fake__echo") && visible(r, "fake__echo") {
		if time.Now().After(deadline) {
			t.Fatal("echo still listed after list_changed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := r.Call(context.Background(), "fake__echo", nil, time.Second); err == nil || !strings.Contains(err.Error(), "no longer available") {
		t.Errorf("echo after shrink = %v", err)
	}
}

func visible(r *Registry, q string) bool {
	for _, ti := range r.Tools() {
		if ti.Name == q {
			return true
		}
	}
	return false
}
