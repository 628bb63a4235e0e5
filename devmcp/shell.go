package devmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/mcp"
	"buzzbox/internal/procgroup"
)

type shellArgs struct {
	Command   *string `json:"command"`
	Workdir   *string `json:"workdir"`
	TimeoutMS *int64  `json:"timeout_ms"`
}

// shellResult is the shell tool's answer, sent as pretty-printed JSON text
// and as structuredContent. Fields are in alphabetical order, the order the
// text form has always had. The artifact paths are left out when there is
// no artifact: a plain optional string, not a nullable one, is what hosts
// with OpenAPI-style or strict schemas accept.
type shellResult struct {
	DurationMS      int64    `json:"duration_ms"`
	ExitCode        int      `json:"exit_code"`
	Notes           []string `json:"notes"`
	Stderr          string   `json:"stderr"`
	StderrArtifact  *string  `json:"stderr_artifact,omitempty"`
	StderrTruncated bool     `json:"stderr_truncated"`
	Stdout          string   `json:"stdout"`
	StdoutArtifact  *string  `json:"stdout_artifact,omitempty"`
	StdoutTruncated bool     `json:"stdout_truncated"`
	TimedOut        bool     `json:"timed_out"`
}

// exitTimedOut is the exit code reported for a command that ran out of
// time, as timeout(1) does.
const exitTimedOut = 124

// shell is the shell tool: run one command in a fresh shell process and
// report its exit code and output.
func (s *Server) shell(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a shellArgs
	if err := decodeArgs(raw, &a, false); err != nil {
		return nil, err
	}
	if a.Command == nil {
		return nil, missing("command")
	}
	if err := nonNegative("timeout_ms", a.TimeoutMS); err != nil {
		return nil, err
	}
	if len(*a.Command) > maxCommandBytes {
		return nil, toolErrorf("command is %d bytes, over the %d byte limit; write a script file with str_replace and run that", len(*a.Command), maxCommandBytes)
	}
	timeout := defaultShellTimeout
	if a.TimeoutMS != nil {
		timeout = min(time.Duration(*a.TimeoutMS)*time.Millisecond, maxShellTimeout)
		if *a.TimeoutMS > int64(maxShellTimeout/time.Millisecond) {
			timeout = maxShellTimeout // also guards the multiplication's overflow
		}
	}
	dir := s.cwd
	if a.Workdir != nil && *a.Workdir != "" {
		dir = s.root(a.Workdir)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			why := "not a directory"
			if err != nil {
				why = causeOf(err)
			}
			return nil, toolErrorf("workdir is not an existing directory: %s (%s)", *a.Workdir, why)
		}
	}
	if s.sh.err != nil {
		return nil, &toolError{msg: s.sh.err.Error()}
	}
	res, err := s.runShell(ctx, c, *a.Command, dir, timeout)
	if err != nil {
		return nil, err
	}
	text, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(string(text))}, StructuredContent: res}, nil
}

// runShell runs command and collects its result. A cancelled ctx kills the
// process group at once and returns jsonrpc.ErrNoReply: MCP asks that a
// cancelled request get no response.
func (s *Server) runShell(ctx context.Context, c *call, command, dir string, timeout time.Duration) (*shellResult, error) {
	start := time.Now()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, toolErrorf("failed to spawn shell: %v", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, toolErrorf("failed to spawn shell: %v", err)
	}
	// exec.Command (not a bare Cmd literal) so GODEBUG=execwait=2 can
	// report a Cmd that was started and never waited for.
	// s.sh.path holds a slash, so Command does no PATH lookup.
	cmd := exec.Command(s.sh.path, s.sh.flag, command)
	if s.sandbox != nil {
		// The sandbox entry applies Landlock and execs the shell in its
		// place: same pid, same process group, same pipes.
		cmd = exec.Command(s.sandbox[0], append(s.sandboxArgv(), s.sh.path, s.sh.flag, command)...)
		cmd.Args[0] = serverName
	}
	cmd.Dir = dir
	cmd.Env = s.childEnv
	cmd.Stdout = outW // *os.File: handed to the child as is, no copying goroutine
	cmd.Stderr = errW
	// Stdin nil: the null device, so a command waiting for input ends.
	procgroup.Set(cmd) // before setNamespaces, which adds to SysProcAttr
	if s.sandbox != nil && s.ownProc {
		setNamespaces(cmd)
	}
	child, err := procgroup.Start(cmd, procgroup.Pipes{}) // dies with buzz-dev-mcp
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, toolErrorf("failed to spawn shell %s: %v", s.sh.path, err)
	}
	pgid := child.Pid()
	// Last resort: if this function is left by a panic, the group must not
	// outlive the call.
	finished := false
	defer func() {
		if !finished {
			child.Kill()
		}
	}()
	log := s.log.With("tool", "shell", "pid", pgid)
	log.Debug("started", "dir", dir, "timeout", timeout)

	stdout := newCapture("stdout", s.sess.artifactsDir)
	stderr := newCapture("stderr", s.sess.artifactsDir)
	outDone, errDone := make(chan struct{}), make(chan struct{})
	// Each reader ends at EOF (every holder of the pipe's write end is gone)
	// or when its read end is closed to abort it.
	go func() { defer close(outDone); stdout.readFrom(outR) }()
	go func() { defer close(errDone); stderr.readFrom(errR) }()

	var tick <-chan time.Time
	if c != nil && c.progressToken != nil {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		tick = t.C
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()

	var waitErr error
	timedOut, cancelled := false, false
wait:
	for {
		select {
		case <-ctx.Done():
			cancelled = true
			break wait
		case <-child.Exited():
			break wait
		case <-timer.C:
			timedOut = true
			break wait
		case <-tick:
			c.progress(time.Since(start), timeout, fmt.Sprintf("running for %s", time.Since(start).Round(time.Second)))
		}
	}
	if !cancelled && ctx.Err() != nil {
		cancelled = true // cancellation wins a race with exit or timeout
	}

	var notes []string
	switch {
	case cancelled:
		if child.Stop(procgroup.Ladder{Term: s.cancelTerm(), Reap: s.opts.reapAfterCancel}) == procgroup.ErrNotReaped {
			log.Warn("shell not reaped after cancellation")
		}
		outR.Close()
		errR.Close()
		<-outDone
		<-errDone
		stdout.discard()
		stderr.discard()
		log.Info("cancelled", "elapsed", time.Since(start))
		finished = true
		return nil, jsonrpc.ErrNoReply
	case timedOut:
		waitErr = s.stopGroup(child)
		if waitErr == nil {
			waitErr = errors.New("timed out")
		}
	default:
		// The shell is gone. Anything it left running in its group (a
		// background job) is stopped now, so it cannot outlive the call;
		// when nothing is left, there is nothing to wait for.
		procgroup.Reap(pgid)
		if procgroup.Alive(pgid) {
			log.Debug("stopping processes left in the group")
		}
		waitErr = s.stopGroup(child)
	}

	// One deadline for both readers: an escaped process usually holds both.
	joinCtx, cancelJoin := context.WithTimeout(context.Background(), s.opts.readerJoin)
	defer cancelJoin()
	for _, r := range []struct {
		label string
		done  chan struct{}
		pipe  *os.File
	}{{"stdout", outDone, outR}, {"stderr", errDone, errR}} {
		select {
		case <-r.done:
		case <-joinCtx.Done():
			select {
			case <-r.done:
			default:
				notes = append(notes, r.label+" reader did not complete (a process outside the command's group kept the pipe open); output may be incomplete")
				r.pipe.Close() // makes the blocked Read return
				<-r.done
			}
		}
		r.pipe.Close()
	}

	finished = true
	res := &shellResult{Notes: notes, TimedOut: timedOut}
	switch {
	case timedOut:
		res.ExitCode = exitTimedOut
	default:
		res.ExitCode = exitCode(waitErr)
	}
	id := s.sess.nextCall()
	var outArt, errArt string
	res.Stdout, outArt = stdout.finish(s.sess, id, &res.Notes)
	res.Stderr, errArt = stderr.finish(s.sess, id, &res.Notes)
	res.StdoutTruncated, res.StderrTruncated = stdout.truncated(), stderr.truncated()
	if outArt != "" {
		res.StdoutArtifact = &outArt
	}
	if errArt != "" {
		res.StderrArtifact = &errArt
	}
	if res.Notes == nil {
		res.Notes = []string{}
	}
	res.DurationMS = time.Since(start).Milliseconds()
	log.Debug("finished", "exit_code", res.ExitCode, "timed_out", timedOut, "duration_ms", res.DurationMS, "stdout_bytes", stdout.total, "stderr_bytes", stderr.total)
	return res, nil
}

// stopGroup stops the shell's process group: SIGTERM, killGrace for the
// group to empty (polled, so a group that exits early or is already gone
// is not waited for), then SIGKILL. It returns the shell's Wait error; a
// shell that survives reapAfterKill after SIGKILL is waited for anyway,
// with a warning.
func (s *Server) stopGroup(child *procgroup.Child) error {
	err := child.Stop(procgroup.Ladder{Term: s.termGrace(), Reap: reapAfterKill})
	if err == procgroup.ErrNotReaped {
		s.log.Warn("shell survived SIGKILL of its group; waiting for it", "pid", child.Pid())
		<-child.Exited()
		err = child.Err()
	}
	return err
}

// exitCode maps a Wait error to the reported exit code: the status of a
// normal exit, else -1 (killed by a signal, or the wait failed).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode() // -1 when a signal ended it
	}
	return -1
}
