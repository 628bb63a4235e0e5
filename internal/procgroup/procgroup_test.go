//go:build unix

package procgroup

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalEndsGrandchildren: a shell's background child is in the
// shell's group, and one signal to the group ends both.
func TestSignalEndsGrandchildren(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("SKIP(loud): no sh to start a process tree with")
	}
	cmd := exec.Command(sh, "-c", "sleep 60 & echo $!; wait")
	Set(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("shell printed %q, want the background pid", line)
	}
	pgid := cmd.Process.Pid
	if !Alive(pgid) {
		t.Fatal("Alive = false for a running group")
	}
	Signal(pgid, syscall.SIGKILL)
	cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); running(grandchild); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(grandchild, syscall.SIGKILL)
			t.Fatal("the background sleep outlived SIGKILL to its group")
		}
	}
	if Alive(pgid) {
		t.Error("Alive = true after the whole group ended")
	}
}

// running reports whether pid is a live (not zombie) process.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}
