//go:build unix

package procgroup

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// patience bounds each ladder step in these tests. It is an upper bound
// only: every test passes or fails on what the child did, never on how
// long it took.
const patience = time.Minute

// startShell starts sh -c script as a Child with the pipes asked for and
// waits for the script's first line, which says its traps are set.
func startShell(t *testing.T, script string, pipes Pipes) (*Child, string) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("SKIP(loud): no sh to start a child with")
	}
	pipes.Stdout = true
	c, err := Start(exec.Command(sh, "-c", script), pipes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Kill()
		<-c.Exited()
		c.Stdout.Close()
	})
	line, err := bufio.NewReader(c.Stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the child said nothing before %v", err)
	}
	return c, strings.TrimSpace(line)
}

// exitStatus is how err says the child ended: its exit code, or the
// signal that killed it.
func exitStatus(err error) (code int, sig syscall.Signal) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, 0
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return -1, ws.Signal()
	}
	return ws.ExitStatus(), 0
}

// TestStopChildExitsOnStdinClose: a child that ends when its stdin closes
// is never signalled; Stop reports its own exit status.
func TestStopChildExitsOnStdinClose(t *testing.T) {
	c, _ := startShell(t, `trap 'exit 9' TERM; echo ready; cat >/dev/null; exit 3`, Pipes{Stdin: true})
	err := c.Stop(Ladder{Stdin: patience, Term: patience})
	if code, sig := exitStatus(err); code != 3 || sig != 0 {
		t.Errorf("Stop = %v; want exit status 3 (the child's own, after stdin closed)", err)
	}
	if again := c.Stop(Ladder{}); again != err {
		t.Errorf("second Stop = %v; want the first's %v", again, err)
	}
}

// TestStopChildIgnoresStdinClose: a child that keeps running after its
// stdin closes gets SIGTERM, and Stop reports what its TERM trap did.
func TestStopChildIgnoresStdinClose(t *testing.T) {
	c, _ := startShell(t, `trap 'exit 7' TERM; echo ready; exec 0<&-; while :; do sleep 1; done`, Pipes{Stdin: true})
	// A short Stdin step: the child is known to ignore it.
	err := c.Stop(Ladder{Stdin: 10 * time.Millisecond, Term: patience})
	if code, sig := exitStatus(err); code != 7 || sig != 0 {
		t.Errorf("Stop = %v; want exit status 7 (the TERM trap)", err)
	}
}

// TestStopChildIgnoresTerm: a child (and its own child) that ignore SIGTERM
// are killed, and nothing of the group is left.
func TestStopChildIgnoresTerm(t *testing.T) {
	c, _ := startShell(t, `trap '' TERM; echo ready; while :; do sleep 1; done`, Pipes{})
	err := c.Stop(Ladder{Term: 10 * time.Millisecond, Reap: patience})
	if _, sig := exitStatus(err); sig != syscall.SIGKILL {
		t.Errorf("Stop = %v; want the child killed by SIGKILL", err)
	}
	waitGone(t, "the group after SIGKILL", func() bool { return !Alive(c.Pid()) })
}

// TestStopEndsLeftovers: once the child has exited, what it left running
// in its group is stopped too, and a Stop of a group that is gone sends
// nothing.
func TestStopEndsLeftovers(t *testing.T) {
	c, line := startShell(t, `sleep 600 & echo $!; exit 0`, Pipes{})
	grandchild, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("shell printed %q, want the background pid", line)
	}
	<-c.Exited()
	if err := c.Stop(Ladder{Term: patience}); err != nil {
		t.Errorf("Stop = %v; want the child's own success", err)
	}
	if Alive(c.Pid()) || running(grandchild) {
		t.Errorf("the background sleep %d outlived Stop", grandchild)
	}
}

// waitGone polls gone, which a signal makes true: the death of a process
// that is not our child sends us no event. Exceeding patience fails.
func waitGone(t *testing.T, what string, gone func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !gone() {
		if time.Now().After(deadline) {
			t.Fatalf("%s still running", what)
		}
		time.Sleep(groupPoll)
	}
}

// TestBoundTermsTheGroup: a bounded child whose context ends gets SIGTERM
// (its trap says so), and one that ignores it is killed after the grace.
func TestBoundTermsTheGroup(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("SKIP(loud): no sh to start a child with")
	}
	for _, tc := range []struct {
		name, script string
		grace        time.Duration
		code         int
		sig          syscall.Signal
	}{
		{"trapped", `trap 'exit 5' TERM; echo ready; while :; do sleep 1; done`, patience, 5, 0},
		{"ignored", `trap '' TERM; echo ready; while :; do sleep 1; done`, 10 * time.Millisecond, -1, syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cmd := exec.CommandContext(ctx, sh, "-c", tc.script)
			Bound(cmd, tc.grace)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
				t.Fatalf("the child said nothing before %v", err)
			}
			cancel()
			err = cmd.Wait()
			if code, sig := exitStatus(err); code != tc.code || sig != tc.sig {
				t.Errorf("Wait = %v; want exit code %d, signal %v", err, tc.code, tc.sig)
			}
		})
	}
}
