package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/mcp"
)

// httpTransport speaks MCP Streamable HTTP (legacy era, 2025-03-26 …
// 2025-11-25): every client message is one POST; a request's answer comes
// back as application/json or as an SSE stream that ends with it. A stream
// the server closes before the answer, after giving an event id, is
// resumed with a GET carrying Last-Event-ID once the server's retry delay
// has passed (SEP-1699). After initialization a GET opens the standalone
// stream, on which the server may send requests and notifications that
// belong to no POST; servers that offer none answer it with 405.
//
// Every stream feeds one dispatcher: answers go to the waiting call by id,
// server requests are answered (ping) or refused with -32601 at once, and
// notifications/tools/list_changed reaches onListChanged. Written on
// net/http directly so it shares the frame caps and error mapping of the
// stdio client.
type httpTransport struct {
	url           string
	headers       []nameValue
	hc            *http.Client
	log           *slog.Logger
	onListChanged func()
	auth          *oauthClient // nil when the entry sets its own Authorization

	nextID  atomic.Int64
	mu      sync.Mutex
	session string                      // Mcp-Session-Id from the initialize response
	version string                      // negotiated protocol version
	pending map[string]chan *rpcMessage // calls awaiting an answer, by id
	ended   chan struct{}
	endOnce sync.Once
	ctx     context.Context // cancelled by close; bounds every request
	cancel  context.CancelFunc
}

type nameValue struct{ Name, Value string }

func newHTTP(url string, headers []nameValue, hc *http.Client, onListChanged func(), log *slog.Logger) *httpTransport {
	ctx, cancel := context.WithCancel(context.Background())
	return &httpTransport{url: url, headers: headers, hc: hc, log: log, onListChanged: onListChanged,
		pending: map[string]chan *rpcMessage{}, ended: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// withOAuth lets the transport obtain bearer tokens (see oauth.go), kept
// under stateDir, unless the entry sets an Authorization header itself.
func (t *httpTransport) withOAuth(stateDir string) *httpTransport {
	for _, h := range t.headers {
		if strings.EqualFold(h.Name, "Authorization") {
			return t
		}
	}
	t.auth = newOAuth(t.url, stateDir, t.hc, t.log)
	return t
}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// request sends one HTTP request bound to ctx and to the transport's life,
// with the session headers and the OAuth bearer token; the response body's
// Close releases both. A 401, or a 403 whose challenge says
// insufficient_scope, gets a new token and the request is sent again, at
// most maxAuthAttempts times.
func (t *httpTransport) request(ctx context.Context, method string, body []byte, lastEventID string) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := t.send(ctx, method, body, lastEventID)
		if err != nil || t.auth == nil || attempt >= maxAuthAttempts {
			return resp, err
		}
		ch, bearer := parseChallenges(resp.Header.Values("WWW-Authenticate"))
		switch {
		case resp.StatusCode == http.StatusUnauthorized && bearer:
		case resp.StatusCode == http.StatusUnauthorized && t.auth.registered():
			// No Bearer challenge, but a client is registered for the
			// server: discovery from the well-known locations may work.
		case resp.StatusCode == http.StatusForbidden && bearer && ch.Error == "insufficient_scope":
		default:
			return resp, nil
		}
		drain(resp.Body)
		if err := t.auth.obtain(ctx, resp.StatusCode, ch); err != nil {
			return nil, fmt.Errorf("%s; oauth: %w", resp.Status, err)
		}
	}
}

// send is one attempt of request.
func (t *httpTransport) send(ctx context.Context, method string, body []byte, lastEventID string) (*http.Response, error) {
	ctx, cancel0 := context.WithCancel(ctx)
	stop := context.AfterFunc(t.ctx, cancel0)
	cancel := func() { stop(); cancel0() }
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, rd)
	if err != nil {
		cancel()
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	if t.auth != nil {
		if h := t.auth.header(ctx); h != "" {
			req.Header.Set("Authorization", h)
		}
	}
	for _, h := range t.headers {
		req.Header.Set(h.Name, h.Value)
	}
	t.mu.Lock()
	if t.session != "" {
		req.Header.Set(mcp.HeaderSessionID, t.session)
	}
	if t.version != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, t.version)
	}
	t.mu.Unlock()
	resp, err := t.hc.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

func (t *httpTransport) post(ctx context.Context, msg any) (*http.Response, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	return t.request(ctx, http.MethodPost, body, "")
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func isEventStream(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}

func (t *httpTransport) call(ctx context.Context, method string, params, result any, onID func(json.RawMessage)) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if params == nil {
		raw = nil
	}
	id := json.RawMessage(strconv.FormatInt(t.nextID.Add(1), 10))
	if onID != nil {
		onID(id)
	}
	answer := make(chan *rpcMessage, 1)
	t.mu.Lock()
	t.pending[string(id)] = answer
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.pending, string(id))
		t.mu.Unlock()
	}()
	resp, err := t.post(ctx, rpcMessage{JSONRPC: jsonrpc.Version, ID: id, Method: method, Params: raw})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("post %s: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxHTTPErrorBytes))
		if resp.StatusCode == http.StatusNotFound && t.sessionID() != "" {
			t.end()
		}
		return fmt.Errorf("post %s: %s: %s", method, resp.Status, strings.TrimSpace(string(b)))
	}
	if method == mcp.MethodInitialize {
		t.mu.Lock()
		t.session = resp.Header.Get(mcp.HeaderSessionID)
		t.mu.Unlock()
	}
	var reply *rpcMessage
	if isEventStream(resp) {
		reply, err = t.await(ctx, resp.Body, id, answer)
	} else {
		var m rpcMessage
		if err = json.NewDecoder(io.LimitReader(resp.Body, maxFrameBytes)).Decode(&m); err == nil {
			reply = &m
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("read %s reply: %w", method, err)
	}
	if reply.Error != nil {
		return reply.Error
	}
	if method == mcp.MethodInitialize {
		var init initializeReply
		_ = json.Unmarshal(reply.Result, &init)
		t.mu.Lock()
		t.version = init.ProtocolVersion
		t.mu.Unlock()
	}
	if result != nil && len(reply.Result) > 0 {
		if err := json.Unmarshal(reply.Result, result); err != nil {
			return fmt.Errorf("decode %s result: %w", method, err)
		}
	}
	return nil
}

func (t *httpTransport) sessionID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

// await waits for the answer to id while follow reads the request's SSE
// stream, resuming it as often as the server closes it early. The answer
// may arrive on any stream.
func (t *httpTransport) await(ctx context.Context, body io.ReadCloser, id json.RawMessage, answer <-chan *rpcMessage) (*rpcMessage, error) {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed := make(chan error, 1)
	// Ends when the answer was read, the stream failed for good, or
	// fctx ended (the resumed request is bound to it; the first body is
	// closed by call).
	go func() { failed <- t.follow(fctx, body, id) }()
	select {
	case m := <-answer:
		return m, nil
	case err := <-failed:
		select {
		case m := <-answer:
			return m, nil
		default:
		}
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sseState is what a client keeps across the streams of one request: the
// last event id seen and the server's reconnection delay.
type sseState struct {
	lastID string
	retry  time.Duration
}

// follow reads a request's stream; when it ends before the answer to id
// and the server gave an event id, it waits the retry delay and resumes
// with GET and Last-Event-ID. It returns nil once the answer was dispatched.
func (t *httpTransport) follow(ctx context.Context, body io.ReadCloser, id json.RawMessage) error {
	st := sseState{retry: sseDefaultRetry}
	failures := 0
	for {
		got, err := t.readEvents(ctx, body, &st, id)
		body.Close()
		if got {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if st.lastID == "" {
			if err == nil || errors.Is(err, io.EOF) {
				return errors.New("stream ended before the response")
			}
			return err
		}
		for {
			if !sleepCtx(ctx, st.retry) {
				return ctx.Err()
			}
			resp, err := t.request(ctx, http.MethodGet, nil, st.lastID)
			if err == nil && resp.StatusCode == http.StatusOK && isEventStream(resp) {
				body = resp.Body
				failures = 0
				break
			}
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return fmt.Errorf("resume stream after event %s: GET answered %q, not an event stream", st.lastID, resp.Header.Get("Content-Type"))
				}
				return fmt.Errorf("resume stream after event %s: GET: %s", st.lastID, resp.Status)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if failures++; failures >= maxResumeFailures {
				return fmt.Errorf("resume stream after event %s: %w", st.lastID, err)
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// readEvents reads one SSE stream to its end, dispatching each message and
// tracking event ids and retry in st. got reports that the answer to want
// (nil for none) was among them; reading stops there.
func (t *httpTransport) readEvents(ctx context.Context, r io.Reader, st *sseState, want json.RawMessage) (got bool, err error) {
	br := bufio.NewReaderSize(io.LimitReader(r, maxFrameBytes), sseBuffer)
	var data []byte
	hasData := false
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && len(line) == 0 {
			return false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			field, value := parseSSELine(line)
			switch field {
			case "data":
				if hasData {
					data = append(data, '\n')
				}
				data = append(data, value...)
				hasData = true
			case "id":
				if bytes.IndexByte(value, 0) < 0 {
					st.lastID = string(value)
				}
			case "retry":
				if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil {
					st.retry = clampRetry(time.Duration(ms) * time.Millisecond)
				}
			}
			continue
		}
		msg := data
		data, hasData = data[:0:0], false
		if len(bytes.TrimSpace(msg)) == 0 {
			continue
		}
		var m rpcMessage
		if json.Unmarshal(msg, &m) != nil {
			t.log.Debug("mcp stream event is not a JSON-RPC message; ignored", "bytes", len(msg))
			continue
		}
		if t.dispatch(ctx, &m) && want != nil && bytes.Equal(bytes.TrimSpace(m.ID), want) {
			return true, nil
		}
	}
}

// parseSSELine splits an SSE line into field and value (one leading space
// of the value dropped); a comment line has the empty field.
func parseSSELine(line []byte) (string, []byte) {
	if line[0] == ':' {
		return "", nil
	}
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return string(line), nil
	}
	return string(name), bytes.TrimPrefix(value, []byte(" "))
}

// clampRetry keeps a server's retry delay within what the client will
// honour: at least sseMinRetry, at most sseMaxRetry.
func clampRetry(d time.Duration) time.Duration {
	return min(max(d, sseMinRetry), sseMaxRetry)
}

// dispatch handles one message from the server on any stream and reports
// whether it was an answer (a message with an id and no method).
func (t *httpTransport) dispatch(ctx context.Context, m *rpcMessage) bool {
	switch {
	case m.Method != "" && len(m.ID) > 0:
		t.answer(ctx, m)
	case m.Method != "":
		if m.Method == mcp.MethodToolsListChanged && t.onListChanged != nil {
			t.onListChanged()
		}
	case len(m.ID) > 0:
		t.mu.Lock()
		ch := t.pending[string(bytes.TrimSpace(m.ID))]
		t.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default: // a duplicate answer; the first one counts
			}
		}
		return true
	}
	return false
}

// answer replies to a server request: ping gets {}, anything else (the
// client offers no sampling, roots or elicitation) -32601 at once, so the
// server's own work does not wait on a reply that would never come.
func (t *httpTransport) answer(ctx context.Context, m *rpcMessage) {
	reply := rpcMessage{JSONRPC: jsonrpc.Version, ID: m.ID}
	if m.Method == mcp.MethodPing {
		reply.Result = json.RawMessage("{}")
	} else {
		reply.Error = jsonrpc.Errorf(jsonrpc.MethodNotFound, "method not found: %s", m.Method)
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpNotifyTimeout)
	defer cancel()
	resp, err := t.post(actx, reply)
	if err != nil {
		t.log.Debug("mcp answer to a server request failed", "method", m.Method, "err", err)
		return
	}
	resp.Body.Close()
}

// listen opens the standalone stream and keeps it open, resuming it as
// follow does, until the transport closes or the server refuses it. The
// goroutine it starts ends then.
func (t *httpTransport) listen() {
	go func() {
		st := sseState{retry: sseDefaultRetry}
		failures := 0
		for {
			resp, err := t.request(t.ctx, http.MethodGet, nil, st.lastID)
			if err != nil {
				if t.ctx.Err() != nil {
					return
				}
				if failures++; failures >= maxResumeFailures {
					t.log.Warn("mcp standalone stream lost", "err", err)
					return
				}
			} else {
				if resp.StatusCode != http.StatusOK || !isEventStream(resp) {
					resp.Body.Close()
					t.log.Debug("mcp server offers no standalone stream", "status", resp.Status)
					return
				}
				failures = 0
				_, err := t.readEvents(t.ctx, resp.Body, &st, nil)
				resp.Body.Close()
				if t.ctx.Err() != nil {
					return
				}
				t.log.Debug("mcp standalone stream ended; reconnecting", "err", err, "retry", st.retry)
			}
			if !sleepCtx(t.ctx, st.retry) {
				return
			}
		}
	}()
}

func (t *httpTransport) notify(method string, params any) error {
	var raw json.RawMessage
	if params != nil {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), httpNotifyTimeout)
	defer cancel()
	resp, err := t.post(ctx, rpcMessage{JSONRPC: jsonrpc.Version, Method: method, Params: raw})
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (t *httpTransport) end() { t.endOnce.Do(func() { close(t.ended) }) }

func (t *httpTransport) done() <-chan struct{} { return t.ended }

// close ends the session: a best-effort DELETE with the session id, then
// every in-flight request and stream is abandoned.
func (t *httpTransport) close(graceful bool) {
	if sid := t.sessionID(); sid != "" && graceful {
		ctx, cancel := context.WithTimeout(context.Background(), stdinGrace)
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.url, nil)
		if err == nil {
			req.Header.Set(mcp.HeaderSessionID, sid)
			if t.auth != nil {
				if tok := t.auth.current(); tok != "" {
					req.Header.Set("Authorization", tok)
				}
			}
			for _, h := range t.headers {
				req.Header.Set(h.Name, h.Value)
			}
			if resp, err := t.hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		cancel()
	}
	t.cancel()
	t.end()
}
