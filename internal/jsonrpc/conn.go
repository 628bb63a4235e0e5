package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultMaxLineBytes bounds one inbound frame, newline included, when
// Options.MaxLineBytes is zero. Large enough for an image in base64 or a big
// tool result; small enough that a runaway peer cannot exhaust memory.
const DefaultMaxLineBytes = 64 << 20

// readChunk is the reader's buffer size; longer lines are assembled from
// several chunks up to the frame bound.
const readChunk = 64 << 10

// Options configure a Conn. The zero value is usable.
type Options struct {
	// MaxLineBytes bounds one inbound frame, newline included. Zero means
	// DefaultMaxLineBytes.
	MaxLineBytes int
	// OversizeFatal makes an over-long or non-UTF-8 frame end the connection
	// (Serve returns a *LineError). When false, such a frame is skipped and
	// answered (id null) with InvalidRequest when over-long, ParseError when
	// not UTF-8, and serving goes on.
	OversizeFatal bool
	// LineHint, when set, is appended to the reply to an over-long frame: the
	// setting that raises the bound (BUZZ_AGENT_MAX_LINE_BYTES). Empty adds
	// nothing.
	LineHint string
	// WriteTimeout bounds the write of one outbound frame. A peer that reads
	// nothing for that long breaks the connection: the frame may be half
	// written, so every later write fails with ErrWriteTimeout, OnWriteTimeout
	// runs and the connection ends as Close would. Zero means no bound; a
	// blocked write then holds only its own frame, and a Call whose ctx ends
	// returns while the write goes on.
	WriteTimeout time.Duration
	// OnWriteTimeout, when set, is called once when a write exceeds
	// WriteTimeout, before the connection ends (to close the pipe or retire
	// the peer). It must not call back into the Conn's writes.
	OnWriteTimeout func()
	// Logger receives diagnostics. Nil discards them.
	Logger *slog.Logger
	// BeforeRequest, when set, is called on the reader goroutine for each
	// incoming request just before its handler goroutine starts. It lets a
	// server order a request against notifications that follow it (an ACP
	// session/cancel right after session/prompt). It must not block.
	BeforeRequest func(req *Request)
}

// LineError reports an inbound frame that broke the framing rules.
type LineError struct {
	Limit int  // the frame bound in bytes
	UTF8  bool // true when the frame was not valid UTF-8 rather than too long
}

func (e *LineError) Error() string {
	if e.UTF8 {
		return "jsonrpc: frame is not valid UTF-8"
	}
	return fmt.Sprintf("io: line exceeds max (%d bytes)", e.Limit)
}

// Handler answers one incoming request or notification. For a request the
// result is marshalled as the reply (a json.RawMessage is sent as is); an
// *Error is sent as the error object; ErrNoReply sends nothing; any other
// error is sent as InternalError with its text. For a notification the
// return values are ignored.
type Handler func(ctx context.Context, req *Request) (result any, err error)

// Conn is one JSON-RPC connection over a reader and a writer.
type Conn struct {
	r    io.Reader
	w    io.Writer
	opts Options
	log  *slog.Logger

	// wsem serialises writes (one frame per Write call); a writer waiting
	// for it can give up when its ctx ends.
	wsem      chan struct{}
	deadlines bool          // w takes write deadlines (a pollable pipe or socket)
	wbroken   chan struct{} // closed once a write timed out; writes fail after
	wonce     sync.Once

	mu       sync.Mutex
	nextID   int64
	pending  map[string]chan *wire         // outgoing calls by id
	inflight map[string]context.CancelFunc // incoming requests by id
	closed   bool
	done     chan struct{}
	closeErr error
}

// NewConn returns a connection that reads frames from r and writes them to w.
func NewConn(r io.Reader, w io.Writer, opts Options) *Conn {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Conn{
		r:        r,
		w:        w,
		opts:     opts,
		log:      log,
		wsem:     make(chan struct{}, 1),
		wbroken:  make(chan struct{}),
		pending:  make(map[string]chan *wire),
		inflight: make(map[string]context.CancelFunc),
		done:     make(chan struct{}),
	}
	if d, ok := w.(writeDeadliner); ok && opts.WriteTimeout > 0 {
		// Clearing the deadline tells whether w has them: a pipe that
		// is not in the poller answers os.ErrNoDeadline.
		c.deadlines = d.SetWriteDeadline(time.Time{}) == nil
	}
	return c
}

// writeDeadliner is a writer that takes write deadlines (*os.File, net.Conn).
type writeDeadliner interface {
	SetWriteDeadline(t time.Time) error
}

// ErrWriteTimeout is the cause of a connection ended because the peer read
// nothing for Options.WriteTimeout.
var ErrWriteTimeout = errors.New("jsonrpc: peer stopped reading (write timeout)")

// Done is closed when the connection has ended: the reader saw EOF or an
// error, or Close was called.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, nil for a clean EOF or Close.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// Close ends the connection: pending calls fail with ErrClosed and every
// in-flight handler's context is cancelled. It does not close r or w.
func (c *Conn) Close() { c.shutdown(nil) }

func (c *Conn) shutdown(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.closeErr = err
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	for _, cancel := range c.inflight {
		cancel()
	}
	close(c.done)
}

// Serve reads frames until EOF, a read error, a fatal framing error, ctx's
// end or Close, dispatching them to h. It returns once every in-flight
// handler has finished and its reply was written. A clean EOF returns nil;
// ctx's end returns ctx.Err().
func (c *Conn) Serve(ctx context.Context, h Handler) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()

	frames := make(chan frame)
	// The reader goroutine ends at EOF or a read error, or, if it is blocked
	// in Read when Serve returns, at the next frame or EOF: a blocked read of
	// stdin cannot be interrupted portably, so that one goroutine may outlive
	// Serve until the peer closes the pipe.
	go c.readFrames(frames)
	for {
		var f frame
		select {
		case <-ctx.Done():
			c.shutdown(ctx.Err())
			return ctx.Err()
		case <-c.done:
			return c.Err()
		case f = <-frames:
		}
		if f.err != nil {
			var le *LineError
			if errors.As(f.err, &le) && !c.opts.OversizeFatal {
				c.log.Warn("skipped inbound frame", "err", f.err)
				c.writeError(nullID, c.lineReply(le))
				continue
			}
			err := f.err
			if err == io.EOF {
				err = nil
			} else {
				c.log.Error("connection ended", "err", err)
			}
			c.shutdown(err)
			return err
		}
		c.dispatch(ctx, f.line, h, &wg)
	}
}

// lineReply is the answer to a skipped frame: a frame that is not UTF-8
// cannot be parsed as JSON text (ParseError); an over-long one was never
// read whole, so it is no valid request (InvalidRequest).
func (c *Conn) lineReply(le *LineError) *Error {
	if le.UTF8 {
		return &Error{Code: ParseError, Message: le.Error() + "; send JSON text encoded as UTF-8"}
	}
	msg := fmt.Sprintf("%s; frame skipped to its newline", le.Error())
	if c.opts.LineHint != "" {
		msg += "; " + c.opts.LineHint
	}
	return &Error{Code: InvalidRequest, Message: msg}
}

// frame is one inbound line, or the error that ended or skipped one.
type frame struct {
	line []byte
	err  error
}

// readFrames sends each non-blank frame to out until a terminal error, which
// it sends last. Non-fatal framing errors are sent and reading goes on.
func (c *Conn) readFrames(out chan<- frame) {
	br := bufio.NewReaderSize(c.r, readChunk)
	for {
		line, err := c.readLine(br)
		if err == nil && len(line) == 0 {
			continue
		}
		if err == nil {
			line = bytes.Clone(line) // the reader's buffer is reused
		}
		select {
		case out <- frame{line: line, err: err}:
		case <-c.done:
			return
		}
		var le *LineError
		if err != nil && !(errors.As(err, &le) && !c.opts.OversizeFatal) {
			return
		}
	}
}

// readLine returns the next frame without its line ending. A frame over the
// bound is consumed to its newline and reported as a *LineError.
func (c *Conn) readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > c.opts.MaxLineBytes {
			if c.opts.OversizeFatal {
				return nil, &LineError{Limit: c.opts.MaxLineBytes}
			}
			if err := discardLine(br, err); err != nil {
				return nil, err
			}
			return nil, &LineError{Limit: c.opts.MaxLineBytes}
		}
		switch {
		case err == nil:
			if buf == nil {
				buf = chunk // fast path: the whole line is in the buffer
			} else {
				buf = append(buf, chunk...)
			}
			return c.finishLine(buf)
		case errors.Is(err, bufio.ErrBufferFull):
			buf = append(buf, chunk...)
		case err == io.EOF:
			if len(buf)+len(chunk) > 0 {
				c.log.Warn("dropped unterminated frame at end of input", "bytes", len(buf)+len(chunk))
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// finishLine strips the line ending and checks the encoding. The returned
// slice may alias the reader's buffer; dispatch copies what it keeps.
func (c *Conn) finishLine(line []byte) ([]byte, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, nil
	}
	if !utf8.Valid(line) {
		return nil, &LineError{Limit: c.opts.MaxLineBytes, UTF8: true}
	}
	return line, nil
}

// discardLine skips input up to and including the next newline. prev is the
// error of the read that found the line too long.
func discardLine(br *bufio.Reader, prev error) error {
	for errors.Is(prev, bufio.ErrBufferFull) {
		_, prev = br.ReadSlice('\n')
	}
	if prev == io.EOF {
		return io.EOF
	}
	if prev != nil && !errors.Is(prev, bufio.ErrBufferFull) {
		return prev
	}
	return nil
}

// dispatch classifies one frame and routes it.
func (c *Conn) dispatch(ctx context.Context, line []byte, h Handler, wg *sync.WaitGroup) {
	trimmed := bytes.TrimLeft(line, " \t")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		c.writeError(nullID, &Error{Code: InvalidRequest, Message: "jsonrpc: batches are not supported"})
		return
	}
	var msg wire
	if err := json.Unmarshal(line, &msg); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) || (len(trimmed) > 0 && trimmed[0] != '{' && json.Valid(line)) {
			c.writeError(nullID, &Error{Code: InvalidRequest, Message: "jsonrpc: message is not a valid request object"})
			return
		}
		c.writeError(nullID, &Error{Code: ParseError, Message: "jsonrpc: parse: " + err.Error()})
		return
	}
	id := msg.ID
	if string(id) == "null" {
		id = nil
	}
	if id != nil && !validID(id) {
		c.writeError(nullID, &Error{Code: InvalidRequest, Message: "jsonrpc: id must be a string or a number"})
		return
	}
	if msg.JSONRPC != Version {
		c.writeError(orNull(id), &Error{Code: InvalidRequest, Message: "jsonrpc: missing or invalid version"})
		return
	}
	switch {
	case msg.Method == "" && id != nil:
		c.response(id, &msg)
		return
	case msg.Method == "":
		c.writeError(nullID, &Error{Code: InvalidRequest, Message: "jsonrpc: missing method and id"})
		return
	}
	req := &Request{Method: msg.Method}
	if msg.Params != nil {
		req.Params = bytes.Clone(msg.Params)
	}
	if id == nil {
		// Notifications run in order on the reader goroutine.
		if _, err := h(ctx, req); err != nil {
			c.log.Debug("notification handler failed", "method", req.Method, "err", err)
		}
		return
	}
	req.ID = bytes.Clone(id)
	key := string(req.ID)
	rctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		return
	}
	if _, dup := c.inflight[key]; dup {
		c.mu.Unlock()
		cancel()
		c.writeError(req.ID, &Error{Code: InvalidRequest, Message: "jsonrpc: duplicate request id " + key})
		return
	}
	c.inflight[key] = cancel
	c.mu.Unlock()
	if c.opts.BeforeRequest != nil {
		c.opts.BeforeRequest(req)
	}
	wg.Add(1)
	// The handler goroutine ends when h returns; h must honour rctx.
	go func() {
		defer wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.inflight, key)
			c.mu.Unlock()
			cancel()
		}()
		c.reply(req, h, rctx)
	}()
}

func (c *Conn) reply(req *Request, h Handler, ctx context.Context) {
	result, err := h(ctx, req)
	if errors.Is(err, ErrNoReply) {
		return
	}
	if err != nil {
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &Error{Code: InternalError, Message: err.Error()}
		}
		c.writeError(req.ID, rpcErr)
		return
	}
	if enc, ok := result.(Encoded); ok {
		if frame := encodedFrame(req.ID, enc); frame != nil {
			c.writeFrame(frame)
			return
		}
		result = json.RawMessage(enc)
	}
	raw, err := marshalResult(result)
	if err != nil {
		c.writeError(req.ID, &Error{Code: InternalError, Message: "jsonrpc: encode result: " + err.Error()})
		return
	}
	c.write(context.Background(), response{JSONRPC: Version, ID: req.ID, Result: raw})
}

func marshalResult(v any) (json.RawMessage, error) {
	switch r := v.(type) {
	case json.RawMessage:
		if len(r) == 0 {
			return json.RawMessage("null"), nil
		}
		return r, nil
	case nil:
		return json.RawMessage("null"), nil
	}
	return json.Marshal(v)
}

func orNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return nullID
	}
	return id
}

// CancelRequest cancels the context of the in-flight incoming request with
// the given raw id, if it is still running. It reports whether one was.
func (c *Conn) CancelRequest(id json.RawMessage) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cancel, ok := c.inflight[canonicalID(id)]
	if ok {
		cancel()
	}
	return ok
}

// canonicalID makes "7" and 7.0-free forms comparable: numbers are
// re-rendered, strings kept as their JSON text.
func canonicalID(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) > 0 && id[0] != '"' {
		if n, err := strconv.ParseInt(string(id), 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	}
	return string(id)
}

// Call sends a request and waits for its response, decoding the result into
// result (which may be nil). A JSON-RPC error reply is returned as *Error.
// If ctx ends first Call returns ctx.Err(); telling the peer (MCP's
// notifications/cancelled, ACP's session/cancel) is the caller's job.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return c.CallTrack(ctx, method, params, result, nil)
}

// CallTrack is Call, but first hands the id it allocated to onID (when not
// nil), so that a caller whose ctx ends can name exactly this request in a
// cancel notification even while other calls run concurrently.
func (c *Conn) CallTrack(ctx context.Context, method string, params, result any, onID func(id json.RawMessage)) error {
	raw, err := marshalParams(params)
	if err != nil {
		return fmt.Errorf("jsonrpc: encode params of %s: %w", method, err)
	}
	ch := make(chan *wire, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("call %s: %w", method, ErrClosed)
	}
	c.nextID++
	id := strconv.FormatInt(c.nextID, 10)
	c.pending[id] = ch
	c.mu.Unlock()
	if onID != nil {
		onID(json.RawMessage(id))
	}
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.write(ctx, wire{JSONRPC: Version, ID: json.RawMessage(id), Method: method, Params: raw}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("call %s: %w", method, err)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case msg, ok := <-ch:
		if !ok {
			return fmt.Errorf("call %s: %w", method, ErrClosed)
		}
		if msg.Error != nil {
			return msg.Error
		}
		if result == nil || len(msg.Result) == 0 {
			return nil
		}
		if err := json.Unmarshal(msg.Result, result); err != nil {
			return fmt.Errorf("call %s: decode result: %w", method, err)
		}
		return nil
	}
}

// LastID returns the id of the most recent outgoing request, for callers that
// must name it in a cancel notification.
func (c *Conn) LastID() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return json.RawMessage(strconv.FormatInt(c.nextID, 10))
}

// Notify sends a notification. It waits for the write as long as
// Options.WriteTimeout allows (forever when zero); NotifyContext lets a
// ctx give up earlier.
func (c *Conn) Notify(method string, params any) error {
	return c.NotifyContext(context.Background(), method, params)
}

// NotifyContext is Notify, returning ctx.Err() when ctx ends before the
// frame is written (see send for what happens to the frame).
func (c *Conn) NotifyContext(ctx context.Context, method string, params any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return fmt.Errorf("jsonrpc: encode params of %s: %w", method, err)
	}
	return c.write(ctx, wire{JSONRPC: Version, Method: method, Params: raw})
}

func marshalParams(v any) (json.RawMessage, error) {
	switch p := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	}
	return json.Marshal(v)
}

// response handles a frame with an id and no method. Only a response to a
// request this side sent is one: it goes to the Call waiting for it, or,
// when that Call has given up, is dropped. Any other such frame is no valid
// request and is answered InvalidRequest, so a peer waiting on it learns
// why; except one carrying an error member, which is never answered (two
// peers would otherwise trade error replies forever).
func (c *Conn) response(id json.RawMessage, msg *wire) {
	key := canonicalID(id)
	c.mu.Lock()
	ch, waiting := c.pending[key]
	if waiting {
		delete(c.pending, key)
	}
	sent := false
	if n, err := strconv.ParseInt(key, 10, 64); err == nil && n >= 1 && n <= c.nextID {
		sent = true // ids are 1, 2, … in the order requests were sent
	}
	c.mu.Unlock()
	hasResult, hasError := msg.Result != nil, msg.Error != nil
	switch {
	case waiting && hasResult != hasError:
		ch <- msg
	case waiting:
		ch <- &wire{Error: &Error{Code: InvalidRequest, Message: "jsonrpc: response must carry exactly one of result and error"}}
	case sent && hasResult != hasError:
		c.log.Debug("dropped late response", "id", string(id))
	case hasError:
		c.log.Debug("dropped error response to no request of ours", "id", string(id), "code", msg.Error.Code)
	default:
		c.writeError(id, &Error{Code: InvalidRequest, Message: "jsonrpc: message has an id but no method, and answers no request sent on this connection"})
	}
}

func (c *Conn) writeError(id json.RawMessage, e *Error) {
	c.write(context.Background(), response{JSONRPC: Version, ID: id, Error: e})
}

// write encodes v as one line and sends it (see send).
func (c *Conn) write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("jsonrpc: encode: %w", err)
	}
	return c.send(ctx, append(b, '\n'))
}

// writeFrame sends one complete frame, newline included, with no ctx:
// replies are written even when their request was cancelled.
func (c *Conn) writeFrame(b []byte) error { return c.send(context.Background(), b) }

// send writes frame b in a single Write, never interleaved with another.
// When ctx ends first, send returns ctx.Err(): while waiting for an earlier
// frame to be written, b is not written at all; once its write started, it
// goes on without the caller. Options.WriteTimeout bounds the write itself.
func (c *Conn) send(ctx context.Context, b []byte) error {
	select {
	case c.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.wbroken:
		return fmt.Errorf("jsonrpc: write: %w", ErrWriteTimeout)
	}
	select {
	case <-c.wbroken: // broke while this writer waited; select chose at random
		<-c.wsem
		return fmt.Errorf("jsonrpc: write: %w", ErrWriteTimeout)
	default:
	}
	timeout := c.opts.WriteTimeout
	if ctx.Done() == nil && (timeout <= 0 || c.deadlines) {
		defer func() { <-c.wsem }()
		return c.writeLocked(b)
	}
	errc := make(chan error, 1)
	// Ends when Write returns: done, failed, at the write deadline, or once
	// the peer reads or closes the pipe. Until then it holds wsem, so no
	// other frame can interleave with a half-written one.
	go func() {
		err := c.writeLocked(b)
		<-c.wsem
		errc <- err
	}()
	var expire <-chan time.Time
	if timeout > 0 && !c.deadlines {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-expire:
		c.writeExpired()
		return fmt.Errorf("jsonrpc: write: %w (nothing read for %v)", ErrWriteTimeout, timeout)
	}
}

// writeLocked writes b; the caller holds wsem.
func (c *Conn) writeLocked(b []byte) error {
	if c.deadlines {
		if err := c.w.(writeDeadliner).SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout)); err != nil {
			c.log.Debug("set write deadline failed", "err", err)
		}
	}
	if _, err := c.w.Write(b); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.writeExpired()
			return fmt.Errorf("jsonrpc: write: %w (nothing read for %v)", ErrWriteTimeout, c.opts.WriteTimeout)
		}
		c.log.Debug("write failed", "err", err)
		return fmt.Errorf("jsonrpc: write: %w", err)
	}
	return nil
}

// writeExpired breaks the connection after a write timed out: later writes
// fail at once, OnWriteTimeout runs, pending calls fail with ErrClosed.
func (c *Conn) writeExpired() {
	c.wonce.Do(func() {
		close(c.wbroken)
		c.log.Error("peer read nothing within the write timeout; ending the connection", "timeout", c.opts.WriteTimeout)
		if c.opts.OnWriteTimeout != nil {
			c.opts.OnWriteTimeout()
		}
		c.shutdown(fmt.Errorf("%w (nothing read for %v)", ErrWriteTimeout, c.opts.WriteTimeout))
	})
}
