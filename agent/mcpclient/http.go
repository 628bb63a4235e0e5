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

	"buzzbox/internal/jsonrpc"
)

// httpTransport speaks MCP Streamable HTTP (legacy era, 2025-03-26 …
// 2025-11-25): every client message is one POST; a request's answer comes
// back as application/json or as an SSE stream that ends with it. Written
// on net/http directly so it shares the frame caps and error mapping of the
// stdio client.
type httpTransport struct {
	url     string
	headers []nameValue
	hc      *http.Client
	log     *slog.Logger

	nextID  atomic.Int64
	mu      sync.Mutex
	session string // Mcp-Session-Id from the initialize response
	version string // negotiated protocol version
	ended   chan struct{}
	endOnce sync.Once
	ctx     context.Context // cancelled by close; bounds every POST
	cancel  context.CancelFunc
}

type nameValue struct{ Name, Value string }

func newHTTP(url string, headers []nameValue, hc *http.Client, log *slog.Logger) *httpTransport {
	ctx, cancel := context.WithCancel(context.Background())
	return &httpTransport{url: url, headers: headers, hc: hc, log: log, ended: make(chan struct{}), ctx: ctx, cancel: cancel}
}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

func (t *httpTransport) post(ctx context.Context, msg any) (*http.Response, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	ctx, cancel0 := context.WithCancel(ctx)
	stop := context.AfterFunc(t.ctx, cancel0)
	cancel := func() { stop(); cancel0() }
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range t.headers {
		req.Header.Set(h.Name, h.Value)
	}
	t.mu.Lock()
	if t.session != "" {
		req.Header.Set("Mcp-Session-Id", t.session)
	}
	if t.version != "" {
		req.Header.Set("MCP-Protocol-Version", t.version)
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

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
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
	if method == "initialize" {
		t.mu.Lock()
		t.session = resp.Header.Get("Mcp-Session-Id")
		t.mu.Unlock()
	}
	var reply *rpcMessage
	body := io.LimitReader(resp.Body, maxFrameBytes)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		reply, err = t.readStream(ctx, body, id)
	} else {
		var m rpcMessage
		if err = json.NewDecoder(body).Decode(&m); err == nil {
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
	if method == "initialize" {
		var init struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
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

// readStream reads SSE events until the response to id; server requests on
// the stream are answered (ping) or rejected, notifications ignored.
func (t *httpTransport) readStream(ctx context.Context, r io.Reader, id json.RawMessage) (*rpcMessage, error) {
	br := bufio.NewReaderSize(r, sseBuffer)
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && len(line) == 0 {
			if err == io.EOF {
				return nil, errors.New("stream ended before the response")
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			if bytes.HasPrefix(line, []byte("data:")) {
				v := bytes.TrimPrefix(line[5:], []byte(" "))
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, v...)
			}
			continue
		}
		if len(bytes.TrimSpace(data)) == 0 {
			data = data[:0]
			continue
		}
		var m rpcMessage
		if json.Unmarshal(data, &m) != nil {
			data = data[:0]
			continue
		}
		data = data[:0]
		switch {
		case m.Method != "" && m.ID != nil:
			var reply rpcMessage
			if m.Method == "ping" {
				reply = rpcMessage{JSONRPC: jsonrpc.Version, ID: m.ID, Result: json.RawMessage("{}")}
			} else {
				reply = rpcMessage{JSONRPC: jsonrpc.Version, ID: m.ID, Error: jsonrpc.Errorf(jsonrpc.MethodNotFound, "method not found: %s", m.Method)}
			}
			if resp, err := t.post(ctx, reply); err == nil {
				resp.Body.Close()
			}
		case m.Method == "" && bytes.Equal(bytes.TrimSpace(m.ID), id):
			return &m, nil
		}
	}
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
// every in-flight POST is abandoned.
func (t *httpTransport) close(graceful bool) {
	if sid := t.sessionID(); sid != "" && graceful {
		ctx, cancel := context.WithTimeout(context.Background(), stdinGrace)
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.url, nil)
		if err == nil {
			req.Header.Set("Mcp-Session-Id", sid)
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
