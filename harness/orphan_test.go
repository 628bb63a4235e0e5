package harness

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"buzzbox/internal/testexe"
)

// TestBugAgentOutlivesKilledHarness: a buzz-acp killed with SIGKILL left
// its agent running, because an agent that ignores the close of its stdin
// (codex-acp does) had nothing else telling it to stop. The agent here
// lingers after stdin closes; it must still be gone soon after the
// harness is killed.
func TestBugAgentOutlivesKilledHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	w := newWorld(t)
	acp := testexe.Link(t, "buzz-acp")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := w.harnessEnv("echo", envFakeLinger+"=1", "HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	cmd := exec.Command(acp, "--relay-url", w.relay.URL(), "--agent-owner", w.owner.Public().Hex(),
		"--no-presence", "--agent-command", self)
	cmd.Env = env.Environ
	cmd.Dir = env.Dir
	cmd.Stderr = t.Output()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := 0
	waitFor(t, "the agent's initialize", 30*time.Second, func() bool {
		for _, l := range w.agentLog() {
			if l.Method == "initialize" {
				pid = l.Pid
			}
		}
		return pid != 0
	})
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) }) // when the test fails
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitFor(t, "the agent to die with the harness", 10*time.Second, func() bool { return !processLive(pid) })
}

// processLive reports whether pid names a process that is neither gone
// nor a zombie (an orphan's zombie waits for whoever reaps orphans here).
func processLive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+3 > len(stat) {
		return false
	}
	return stat[i+2] != 'Z' && stat[i+2] != 'X'
}
