package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// peer is the test's side of a connection served by a Conn: it writes raw
// lines and reads raw reply lines.
type peer struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Reader
}

func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line); err != nil {
		p.t.Fatalf("write %q: %v", line, err)
	}
}

func (p *peer) recv() map[string]any {
	p.t.Helper()
	line, err := p.out.ReadString('\n')
	if err != nil {
		p.t.Fatalf("read reply: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		p.t.Fatalf("reply %q is not JSON: %v", line, err)
	}
	return m
}

// serve starts a Conn on pipes with handler h and returns the peer and a
// channel that yields Serve's error.
func serve(t *testing.T, opts Options, h Handler) (*peer, <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(inR, outW, opts)
	errc := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		err := c.Serve(context.Background(), h)
		outW.Close()
		errc <- err
		close(finished)
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // let a late reply finish
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after stdin closed")
		}
	})
	return &peer{t: t, in: inW, out: bufio.NewReader(outR)}, errc
}

func echo(ctx context.Context, req *Request) (any, error) {
	switch req.Method {
	case "echo":
		return req.Params, nil
	case "fail":
		return nil, Errorf(InvalidParams, "bad thing")
	case "boom":
		return nil, errors.New("internal trouble")
	}
	return nil, Errorf(MethodNotFound, "method not found: %s", req.Method)
}

func code(m map[string]any) int {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0
	}
	return int(e["code"].(float64))
}

func TestServeClassifiesFrames(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		code   int
		wantID any
	}{
		{"parse error", "{not json\n", ParseError, nil},
		{"not an object", "42\n", InvalidRequest, nil},
		{"string value", "\"hi\"\n", InvalidRequest, nil},
		{"batch", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}]\n", InvalidRequest, nil},
		{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"echo"}` + "\n", InvalidRequest, 7.0},
		{"no method no id", `{"jsonrpc":"2.0"}` + "\n", InvalidRequest, nil},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"echo"}` + "\n", InvalidRequest, nil},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":5}` + "\n", InvalidRequest, nil},
		{"unknown method", `{"jsonrpc":"2.0","id":"a","method":"nope"}` + "\n", MethodNotFound, "a"},
		{"handler error", `{"jsonrpc":"2.0","id":2,"method":"fail"}` + "\n", InvalidParams, 2.0},
		{"plain error", `{"jsonrpc":"2.0","id":3,"method":"boom"}` + "\n", InternalError, 3.0},
	}
	p, _ := serve(t, Options{}, echo)
	for _, tt := range tests {
		p.send(tt.line)
		m := p.recv()
		if got := code(m); got != tt.code {
			t.Errorf("%s: code = %d; want %d (reply %v)", tt.name, got, tt.code, m)
		}
		if got := m["id"]; got != tt.wantID {
			t.Errorf("%s: id = %v; want %v", tt.name, got, tt.wantID)
		}
	}
	// Still serving after all of that.
	p.send(`{"jsonrpc":"2.0","id":9,"method":"echo","params":{"x":1}}` + "\r\n")
	m := p.recv()
	if got, _ := json.Marshal(m["result"]); string(got) != `{"x":1}` {
		t.Errorf("echo result = %s; want {\"x\":1}", got)
	}
}

func TestServeOversizeLineNonFatal(t *testing.T) {
	p, _ := serve(t, Options{MaxLineBytes: 64}, echo)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":"` + strings.Repeat("x", 200) + "\"}\n")
	if m := p.recv(); code(m) != InvalidRequest || m["id"] != nil {
		t.Fatalf("oversize reply = %v; want InvalidRequest with null id", m)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"echo","params":1}` + "\n")
	if m := p.recv(); m["result"] != 1.0 {
		t.Fatalf("after oversize, echo = %v; want result 1", m)
	}
	p.send("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\",\"params\":\"\xff\"}\n")
	if m := p.recv(); code(m) != ParseError || m["id"] != nil {
		t.Fatalf("invalid UTF-8 reply = %v; want ParseError with null id", m)
	}
}

func TestServeOversizeLineFatal(t *testing.T) {
	p, errc := serve(t, Options{MaxLineBytes: 64, OversizeFatal: true}, echo)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":"` + strings.Repeat("x", 200) + "\"}\n")
	select {
	case err := <-errc:
		var le *LineError
		if !errors.As(err, &le) || le.Limit != 64 {
			t.Fatalf("Serve = %v; want *LineError with limit 64", err)
		}
		if want := "io: line exceeds max (64 bytes)"; err.Error() != want {
			t.Errorf("error text = %q; want %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve kept going after an oversize frame with OversizeFatal")
	}
}

func TestCancelRequestBeforeReply(t *testing.T) {
	var conn *Conn
	started := make(chan struct{})
	h := func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "wait":
			close(started)
			<-ctx.Done()
			return nil, ErrNoReply
		case "cancel":
			var p struct{ ID json.RawMessage }
			json.Unmarshal(req.Params, &p)
			conn.CancelRequest(p.ID)
			return nil, nil
		}
		return req.Params, nil
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn = NewConn(inR, outW, Options{})
	done := make(chan error, 1)
	go func() { done <- conn.Serve(context.Background(), h); outW.Close() }()
	out := bufio.NewReader(outR)
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"wait"}`+"\n")
	<-started
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"cancel","params":{"id":1}}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"echo","params":"after"}`+"\n")
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, `"id":2`) || !strings.Contains(line, `"after"`) {
		t.Fatalf("first reply = %s; want only the echo (the cancelled call must not answer)", line)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("Serve after EOF = %v; want nil", err)
	}
	if rest, _ := io.ReadAll(out); len(rest) != 0 {
		t.Fatalf("unexpected extra output %q", rest)
	}
}

func TestCallRoundTrip(t *testing.T) {
	// Two Conns wired back to back: the client calls, the server answers.
	aR, aW := io.Pipe()
	bR, bW := io.Pipe()
	server := NewConn(aR, bW, Options{})
	client := NewConn(bR, aW, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go server.Serve(ctx, echo)
	go client.Serve(ctx, func(context.Context, *Request) (any, error) { return nil, nil })

	var got map[string]int
	if err := client.Call(ctx, "echo", map[string]int{"n": 3}, &got); err != nil {
		t.Fatal(err)
	}
	if got["n"] != 3 {
		t.Errorf("Call(echo) = %v; want n=3", got)
	}
	err := client.Call(ctx, "fail", nil, nil)
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != InvalidParams {
		t.Errorf("Call(fail) = %v; want *Error InvalidParams", err)
	}
	client.Close()
	if err := client.Call(ctx, "echo", 1, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close = %v; want ErrClosed", err)
	}
	aW.Close()
	bW.Close()
}

func TestServeEndsOnContext(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	c := NewConn(inR, io.Discard, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx, echo) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Serve = %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return when its context ended while the reader was blocked")
	}
}

func TestUnterminatedFragmentAtEOFDropped(t *testing.T) {
	var out strings.Builder
	c := NewConn(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"echo"}`), &out, Options{})
	if err := c.Serve(context.Background(), echo); err != nil {
		t.Fatalf("Serve = %v; want nil", err)
	}
	if out.Len() != 0 {
		t.Fatalf("output = %q; want nothing for a fragment without newline", out.String())
	}
}

func FuzzServe(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}` + "\n"))
	f.Add([]byte("{\n[\n42\nnull\n\"x\"\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1}` + "\n" + `{"jsonrpc":"2.0","id":1.5,"method":"m"}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","result":{}}` + "\n" + `{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}` + "\n"))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":\"\xff\"}\n" + strings.Repeat("x", 300) + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out strings.Builder
		c := NewConn(strings.NewReader(string(data)), &out, Options{MaxLineBytes: 256})
		c.Serve(context.Background(), echo)
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("output line %q is not JSON", line)
			}
		}
	})
}

func TestCallEndsWithContext(t *testing.T) {
	// The peer never answers: its handler waits for the connection to end.
	aR, aW := io.Pipe()
	bR, bW := io.Pipe()
	server := NewConn(aR, bW, Options{})
	client := NewConn(bR, aW, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go server.Serve(ctx, func(ctx context.Context, _ *Request) (any, error) {
		<-ctx.Done()
		return nil, ErrNoReply
	})
	go client.Serve(ctx, echo)
	short, stop := context.WithTimeout(ctx, 20*time.Millisecond)
	defer stop()
	if err := client.Call(short, "hang", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v; want context.DeadlineExceeded", err)
	}
	aW.Close()
	bW.Close()
}

func TestCallTrackReportsID(t *testing.T) {
	cr, cw := io.Pipe()
	sr, sw := io.Pipe()
	client := NewConn(sr, cw, Options{})
	server := NewConn(cr, sw, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		server.Serve(ctx, func(ctx context.Context, req *Request) (any, error) { return string(req.ID), nil })
	}()
	go client.Serve(ctx, func(context.Context, *Request) (any, error) { return nil, nil })
	var seen json.RawMessage
	var got string
	if err := client.CallTrack(ctx, "m", nil, &got, func(id json.RawMessage) { seen = id }); err != nil {
		t.Fatal(err)
	}
	if string(seen) != got {
		t.Errorf("CallTrack id = %s; server saw %s", seen, got)
	}
	cancel()
	cw.Close()
	sw.Close()
	<-done
}

func TestBeforeRequestRunsInOrderWithNotifications(t *testing.T) {
	var order []string
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"slow"}` + "\n" + `{"jsonrpc":"2.0","method":"note"}` + "\n")
	var out strings.Builder
	c := NewConn(in, &syncWriter{w: &out}, Options{BeforeRequest: func(req *Request) { order = append(order, "before "+req.Method) }})
	err := c.Serve(context.Background(), func(ctx context.Context, req *Request) (any, error) {
		if req.IsNotification() {
			order = append(order, "notify "+req.Method)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "before slow,notify note" {
		t.Errorf("order = %s", got)
	}
}

// syncWriter serialises writes for tests that share a builder.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestAttackIDWithoutMethodUnanswered: a frame with an id and no method that
// answers no request of ours used to be dropped silently, leaving a peer
// that meant it as a request waiting forever.
func TestAttackIDWithoutMethodUnanswered(t *testing.T) {
	p, _ := serve(t, Options{}, echo)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":5}`,
		`{"jsonrpc":"2.0","id":6,"result":{}}`,
		`{"jsonrpc":"2.0","id":"x","params":{}}`,
	} {
		p.send(line + "\n")
		m := p.recv()
		if code(m) != InvalidRequest || m["id"] == nil {
			t.Errorf("%s -> %v; want InvalidRequest with its id", line, m)
		}
	}
	// An error reply to nothing is never answered (no error ping-pong).
	p.send(`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"x"}}` + "\n")
	p.send(`{"jsonrpc":"2.0","id":8,"method":"echo","params":8}` + "\n")
	if m := p.recv(); m["id"] != 8.0 || m["result"] != 8.0 {
		t.Errorf("after an error frame: %v; want the echo reply to 8", m)
	}
}

// TestResponseToOwnCallDelivered: responses to our own calls, on time or
// late, are never answered; a malformed one fails the call.
func TestResponseToOwnCallDelivered(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(inR, outW, Options{})
	go c.Serve(context.Background(), echo)
	defer inW.Close()
	out := bufio.NewReader(outR)
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "ask", nil, nil) }()
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1}`+"\n")
	var rpcErr *Error
	if err := <-errc; !errors.As(err, &rpcErr) || rpcErr.Code != InvalidRequest {
		t.Fatalf("Call with an empty response = %v; want InvalidRequest", err)
	}
	// A late second response to id 1 is dropped; the next reply is echo's.
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":9,"method":"echo","params":9}`+"\n")
	line, err := out.ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":9`) {
		t.Fatalf("reply = %q, %v; want the echo reply to 9", line, err)
	}
	go io.Copy(io.Discard, outR)
}

// TestAttackBlockedWriteHoldsCall: a peer that stops reading used to hold
// Call inside Write past its ctx.
func TestAttackBlockedWriteHoldsCall(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe() // nobody reads outR: every Write blocks
	defer outR.Close()
	c := NewConn(inR, outW, Options{})
	go c.Serve(context.Background(), echo)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Call(ctx, "m", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v; want context.DeadlineExceeded", err)
	}
	// A second call waits behind the blocked frame and gives up too.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := c.NotifyContext(ctx2, "n", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NotifyContext = %v; want context.DeadlineExceeded", err)
	}
}

// TestAttackPeerStopsReading: with WriteTimeout, a peer that reads nothing
// ends the connection, on a pipe with deadlines and on one without.
func TestAttackPeerStopsReading(t *testing.T) {
	big := strings.Repeat("x", 1<<20) // more than any pipe buffer
	t.Run("os pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		checkWriteTimeout(t, w, big)
	})
	t.Run("io pipe", func(t *testing.T) {
		r, w := io.Pipe()
		defer r.Close()
		checkWriteTimeout(t, w, big)
	})
}

func checkWriteTimeout(t *testing.T, w io.Writer, big string) {
	inR, inW := io.Pipe()
	defer inW.Close()
	fired := make(chan struct{})
	c := NewConn(inR, w, Options{WriteTimeout: 50 * time.Millisecond, OnWriteTimeout: func() { close(fired) }})
	go c.Serve(context.Background(), echo)
	if err := c.Notify("n", big); !errors.Is(err, ErrWriteTimeout) {
		t.Fatalf("Notify = %v; want ErrWriteTimeout", err)
	}
	<-fired
	<-c.Done()
	if !errors.Is(c.Err(), ErrWriteTimeout) {
		t.Errorf("Err = %v; want ErrWriteTimeout", c.Err())
	}
	if err := c.Notify("n", nil); !errors.Is(err, ErrWriteTimeout) {
		t.Errorf("Notify after the timeout = %v; want ErrWriteTimeout at once", err)
	}
}
