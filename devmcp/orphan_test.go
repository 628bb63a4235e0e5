package devmcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBugShellOutlivesKilledServer: a buzz-dev-mcp killed with SIGKILL
// left the command it was running alive, since nothing was left to stop
// it. The shell now dies with the server.
func TestBugShellOutlivesKilledServer(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	pidFile := filepath.Join(t.TempDir(), "pid")
	p.request("tools/call", map[string]any{"name": "shell", "arguments": map[string]any{
		"command": "echo $$ > " + pidFile + "; exec sleep 1000", "timeout_ms": 600000}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell never wrote its pid")
		}
		time.Sleep(10 * time.Millisecond) // another process writes it; nothing to wait on
	}
	pids := readPids(t, pidFile)
	t.Cleanup(func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL) // when the test fails
		}
	})
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids)
}
