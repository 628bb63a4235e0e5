package procgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"buzzbox/internal/proc"
)

// groupPoll is how often Stop looks whether a signalled group is empty:
// short, since a group that is gone is not waited for, and each look is
// a kill(2) (plus a /proc scan on Linux when kill finds the group).
const groupPoll = 5 * time.Millisecond

// ErrNotReaped is returned by Stop when the child had not exited within
// Ladder.Reap of SIGKILL.
var ErrNotReaped = errors.New("child not reaped after SIGKILL")

// Pipes says which of a child's standard streams Start connects to pipes
// of its own (*os.File ends, so the write end of stdin takes write
// deadlines where the system's pipes can be polled: Unix).
type Pipes struct {
	Stdin  bool // Child.Stdin is the write end of the child's stdin
	Stdout bool // Child.Stdout is the read end of the child's stdout
}

// Child is a running child process that leads a process group of its own.
// A background goroutine waits for it from Start on; Exited says when it
// has.
type Child struct {
	// Stdin is the write end of the child's stdin pipe; nil unless
	// Pipes.Stdin. Stop closes it first.
	Stdin *os.File
	// Stdout is the read end of the child's stdout pipe; nil unless
	// Pipes.Stdout. The caller closes it once done reading.
	Stdout *os.File

	pid    int
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's result; set before exited is closed

	stopOnce sync.Once
	stopErr  error
}

// Start starts cmd in a new process group through proc.Start (on Linux
// the child then dies with this process, whatever it does with its
// stdin), with the pipes asked for, and waits for it in the background.
// The pipes are *os.File ends handed to the child as they are, so no
// copying goroutine outlives it and exec.Cmd.WaitDelay has nothing to
// bound; the child is stopped by Stop or Kill, not by a context.
func Start(cmd *exec.Cmd, pipes Pipes) (*Child, error) {
	Set(cmd)
	c := &Child{exited: make(chan struct{})}
	var theirs []*os.File // the child's ends, closed here once it holds them
	closeAll := func() {
		for _, f := range append(theirs, c.Stdin, c.Stdout) {
			if f != nil {
				f.Close()
			}
		}
	}
	if pipes.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		cmd.Stdin, c.Stdin, theirs = r, w, append(theirs, r)
	}
	if pipes.Stdout {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("stdout pipe: %w", err)
		}
		cmd.Stdout, c.Stdout, theirs = w, r, append(theirs, w)
	}
	if err := proc.Start(cmd); err != nil {
		closeAll()
		return nil, err
	}
	for _, f := range theirs {
		f.Close()
	}
	c.pid = cmd.Process.Pid
	go func() { // ends when the child exits
		c.err = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// Pid is the child's process id, which is also its group's id.
func (c *Child) Pid() int { return c.pid }

// Exited is closed once the child has exited and been waited for.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Err is the child's Wait error (nil for a zero exit status). Read it only
// after Exited is closed.
func (c *Child) Err() error { return c.err }

// Kill sends SIGKILL to the child's whole group now.
func (c *Child) Kill() { Signal(c.pid, syscall.SIGKILL) }

// Ladder paces Stop. The zero Ladder kills at once and waits for the
// child without bound.
type Ladder struct {
	// Stdin is how long the child gets to exit on its own once its stdin
	// is closed; zero goes on at once.
	Stdin time.Duration
	// Term is how long the group gets to empty after SIGTERM; zero skips
	// SIGTERM.
	Term time.Duration
	// Reap bounds the wait for the child after SIGKILL; zero waits until
	// it exits.
	Reap time.Duration
}

// Stop ends the child and whatever is left in its group: close its stdin
// and wait up to l.Stdin for it to exit; SIGTERM the group and wait up to
// l.Term for the group to empty; SIGKILL the group and wait up to l.Reap
// for the child. A step is skipped once the child has exited and its group
// is empty, so a group that is gone is never waited for. Orphans of the
// group handed to this process are reaped. Stop returns the child's Wait
// error, or ErrNotReaped; later calls return the same.
func (c *Child) Stop(l Ladder) error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(l) })
	return c.stopErr
}

func (c *Child) stop(l Ladder) error {
	if c.Stdin != nil {
		c.Stdin.Close()
	}
	if l.Stdin > 0 {
		c.waitExit(l.Stdin)
	}
	if l.Term > 0 && c.running() {
		Signal(c.pid, syscall.SIGTERM)
		c.waitGone(l.Term)
	}
	if c.running() {
		Signal(c.pid, syscall.SIGKILL)
	}
	if !c.waitExit(l.Reap) {
		return ErrNotReaped
	}
	Reap(c.pid)
	return c.err
}

// running reports whether the child or anything else in its group is
// still running.
func (c *Child) running() bool {
	select {
	case <-c.exited:
		Reap(c.pid)
		return Alive(c.pid)
	default:
		return true
	}
}

// waitExit waits up to d (zero: without bound) for the child to exit and
// reports whether it has.
func (c *Child) waitExit(d time.Duration) bool {
	if d == 0 {
		<-c.exited
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// waitGone waits up to d for the child to exit and its group to empty.
func (c *Child) waitGone(d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	exited := c.exited
	for {
		select {
		case <-exited:
			exited = nil // now only the group is polled
		case <-tick.C:
		case <-deadline.C:
			return
		}
		if exited == nil && !c.running() {
			return
		}
	}
}

// Bound makes cmd, made with exec.CommandContext, stop as Stop stops a
// child when its context ends: the child leads a group of its own, the
// group gets SIGTERM, and exec kills the child once grace has passed
// (WaitDelay, which also bounds the copying of cmd's non-file streams).
// For short children that read their input from a Go reader and start
// nothing of their own; long-lived ones with pipes use Start and Stop.
func Bound(cmd *exec.Cmd, grace time.Duration) {
	Set(cmd)
	cmd.Cancel = func() error {
		Signal(cmd.Process.Pid, syscall.SIGTERM)
		return nil
	}
	cmd.WaitDelay = grace
}
