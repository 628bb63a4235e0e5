package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"

	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/procgroup"
)

// stdioTransport is a child process speaking MCP on its stdin/stdout. The
// child leads its own process group, so killing the group takes its
// grandchildren too.
type stdioTransport struct {
	child  *procgroup.Child
	conn   *jsonrpc.Conn
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
	child, err := procgroup.Start(cmd, procgroup.Pipes{Stdin: true, Stdout: true}) // dies with the agent
	if err != nil {
		return nil, fmt.Errorf("spawn %s: %w", command, err)
	}
	t := &stdioTransport{child: child, served: make(chan struct{}), log: log}
	t.conn = jsonrpc.NewConn(child.Stdout, child.Stdin, jsonrpc.Options{MaxLineBytes: maxFrameBytes, OversizeFatal: true, Logger: log})
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
		<-child.Exited()
		child.Kill()
		t.conn.Close()
		child.Stdout.Close()
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

// close stops the child. Graceful: close its stdin and wait stdinGrace,
// SIGTERM the group and wait termGrace, then SIGKILL. Otherwise SIGKILL
// the group at once. It returns after the child was reaped and the reader
// stopped.
func (t *stdioTransport) close(graceful bool) {
	t.once.Do(func() {
		ladder := procgroup.Ladder{} // SIGKILL at once
		if graceful {
			ladder = procgroup.Ladder{Stdin: stdinGrace, Term: termGrace}
		}
		t.child.Stop(ladder)
		t.conn.Close()
		t.child.Stdout.Close()
		<-t.served
	})
}
