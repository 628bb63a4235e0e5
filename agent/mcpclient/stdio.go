package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/proc"
	"buzzbox/internal/procgroup"
)

// stdioTransport is a child process speaking MCP on its stdin/stdout. The
// child leads its own process group, so killing the group takes its
// grandchildren too.
type stdioTransport struct {
	cmd    *exec.Cmd
	conn   *jsonrpc.Conn
	stdin  io.WriteCloser
	stdout *os.File
	exited chan struct{} // closed when the child has been waited for
	served chan struct{} // closed when the connection's Serve returned
	once   sync.Once
	log    *slog.Logger
}

// startStdio starts command in dir with exactly env and connects to it.
// The child's stderr goes to stderr.
func startStdio(command string, args []string, env []string, dir string, stderr io.Writer, onListChanged func(), log *slog.Logger) (*stdioTransport, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stderr = stderr
	procgroup.Set(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin = inR
	cmd.Stdout = outW
	if err := proc.Start(cmd); err != nil { // dies with the agent
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("spawn %s: %w", command, err)
	}
	inR.Close()
	outW.Close()
	t := &stdioTransport{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{}), served: make(chan struct{}), log: log}
	t.conn = jsonrpc.NewConn(outR, inW, jsonrpc.Options{MaxLineBytes: maxFrameBytes, OversizeFatal: true, Logger: log})
	// Ends when the child's stdout reaches EOF, a frame breaks the rules,
	// or close() closes our end of the pipe.
	go func() {
		defer close(t.served)
		_ = t.conn.Serve(context.Background(), serverRequests(onListChanged))
	}()
	// Ends when the child exits; then the rest of its group is killed and
	// our read end closed, so a grandchild holding the pipe cannot keep the
	// connection alive.
	go func() {
		_ = cmd.Wait()
		procgroup.Signal(cmd.Process.Pid, syscall.SIGKILL)
		close(t.exited)
		t.conn.Close()
		outR.Close()
	}()
	return t, nil
}

func (t *stdioTransport) call(ctx context.Context, method string, params, result any, onID func(json.RawMessage)) error {
	err := t.conn.CallTrack(ctx, method, params, result, onID)
	if errors.Is(err, jsonrpc.ErrClosed) {
		if why := t.conn.Err(); why != nil {
			return fmt.Errorf("%w: %v", err, why) // e.g. a frame over the size cap
		}
	}
	return err
}

func (t *stdioTransport) notify(method string, params any) error {
	return t.conn.Notify(method, params)
}

func (t *stdioTransport) done() <-chan struct{} { return t.conn.Done() }

// close stops the child. Graceful: close its stdin and wait, SIGTERM the
// group and wait, then SIGKILL. Otherwise SIGKILL the group at once. It
// returns after the child was reaped and the reader stopped.
func (t *stdioTransport) close(graceful bool) {
	t.once.Do(func() {
		pid := t.cmd.Process.Pid
		t.stdin.Close()
		if graceful && waitFor(t.exited, stdinGrace) {
			procgroup.Signal(pid, syscall.SIGKILL) // stray grandchildren
		} else {
			if graceful {
				procgroup.Signal(pid, syscall.SIGTERM)
			}
			if !graceful || !waitFor(t.exited, termGrace) {
				procgroup.Signal(pid, syscall.SIGKILL)
			}
		}
		<-t.exited
		t.conn.Close()
		t.stdout.Close()
		<-t.served
	})
}

func waitFor(ch <-chan struct{}, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ch:
		return true
	case <-tm.C:
		return false
	}
}
