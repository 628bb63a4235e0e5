package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// unsupportedServerRequests are what a server may ask of a client that
// buzz-agent does not offer; each must be refused with -32601 at once.
var unsupportedServerRequests = []string{"elicitation/create", "sampling/createMessage", "roots/list"}

// streamServer is a hand-written Streamable HTTP MCP server with one tool,
// "ask", whose call sends the server requests above to the client on the
// stream mode names and answers with the error code each got back:
//
//	"post":       on the tools/call response stream
//	"standalone": on the GET stream (as the TypeScript SDK sends requests
//	              that relate to no client request)
//	"resume":     the tools/call stream ends after a priming event; the
//	              answer comes on the GET that resumes it
//	"noresume":   as resume, but the GET is refused with 405
type streamServer struct {
	t    *testing.T
	mode string

	mu         sync.Mutex
	waiters    map[string]chan json.RawMessage // server request id -> the client's answer
	standalone chan []byte                     // events for the GET stream
	lastIDs    []string                        // Last-Event-ID of each GET
	pendingID  json.RawMessage                 // tools/call awaiting a resumed stream
	lists      chan struct{}                   // one value per tools/list
}

func newStreamServer(t *testing.T, mode string) (*streamServer, *httptest.Server) {
	s := &streamServer{t: t, mode: mode, waiters: map[string]chan json.RawMessage{}, standalone: make(chan []byte, 8), lists: make(chan struct{}, 8)}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return s, hs
}

func sseEvent(w http.ResponseWriter, id string, v any) {
	b, _ := json.Marshal(v)
	if id != "" {
		fmt.Fprintf(w, "id: %s\n", id)
	}
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
	w.(http.Flusher).Flush()
}

func (s *streamServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.serveGet(w, r)
		return
	case http.MethodDelete:
		return
	}
	var m rpcMessage
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch {
	case m.Method == "" && m.ID != nil: // the client's answer to our request
		s.mu.Lock()
		ch := s.waiters[string(m.ID)]
		s.mu.Unlock()
		if ch != nil {
			b, _ := json.Marshal(m.Error)
			ch <- b
		}
		w.WriteHeader(http.StatusAccepted)
	case m.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	case m.Method == "initialize":
		w.Header().Set("Mcp-Session-Id", "sess-1")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
			"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "streams", "version": "1"}}})
	case m.Method == "tools/list":
		select {
		case s.lists <- struct{}{}:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
			"tools": []map[string]any{{"name": "ask", "inputSchema": map[string]any{"type": "object"}}}}})
	case m.Method == "tools/call":
		s.toolsCall(w, r, m.ID)
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "no"}})
	}
}

func (s *streamServer) serveGet(w http.ResponseWriter, r *http.Request) {
	resuming := r.Header.Get("Last-Event-ID") != ""
	s.mu.Lock()
	s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
	var pending json.RawMessage
	if resuming {
		pending, s.pendingID = s.pendingID, nil
	}
	s.mu.Unlock()
	if s.mode == "noresume" || (s.mode == "post" && !resuming) || (s.mode == "resume" && !resuming) {
		http.Error(w, "no GET stream here", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	if pending != nil {
		sseEvent(w, "ev-2", map[string]any{"jsonrpc": "2.0", "id": pending, "result": map[string]any{
			"content": []map[string]any{{"type": "text", "text": "resumed"}}}})
	}
	for {
		select {
		case ev := <-s.standalone:
			w.Write(ev)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func (s *streamServer) toolsCall(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if s.mode == "resume" || s.mode == "noresume" {
		s.mu.Lock()
		s.pendingID = id
		s.mu.Unlock()
		fmt.Fprint(w, "id: ev-1\nretry: 100\ndata: \n\n")
		return // the stream ends before the answer
	}
	var got []string
	for i, method := range unsupportedServerRequests {
		rid := fmt.Sprintf(`"srv-%d"`, i)
		ch := make(chan json.RawMessage, 1)
		s.mu.Lock()
		s.waiters[rid] = ch
		s.mu.Unlock()
		req := map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(rid), "method": method, "params": map[string]any{}}
		if s.mode == "standalone" {
			b, _ := json.Marshal(req)
			s.standalone <- []byte("event: message\ndata: " + string(b) + "\n\n")
		} else {
			sseEvent(w, "", req)
		}
		select {
		case e := <-ch:
			var rpcErr struct {
				Code int `json:"code"`
			}
			json.Unmarshal(e, &rpcErr)
			got = append(got, fmt.Sprintf("%s:%d", method, rpcErr.Code))
		case <-r.Context().Done():
			return
		}
	}
	sseEvent(w, "", map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{
		"content": []map[string]any{{"type": "text", "text": strings.Join(got, " ")}}}})
}

func wantRefused() string {
	var want []string
	for _, m := range unsupportedServerRequests {
		want = append(want, m+":-32601")
	}
	return strings.Join(want, " ")
}

// TestUnsupportedServerRequestsRefusedOverHTTP: elicitation/create,
// sampling/createMessage and roots/list sent in the middle of a tools/call,
// on the call's own stream or on the standalone GET stream, are refused
// with -32601 at once. Sent on the GET stream they used to go unread, so
// the server's tool waited on them until the call timed out.
func TestUnsupportedServerRequestsRefusedOverHTTP(t *testing.T) {
	for _, mode := range []string{"post", "standalone"} {
		t.Run(mode, func(t *testing.T) {
			_, hs := newStreamServer(t, mode)
			r := newRegistry(t, testOpts(t), Spec{Name: "remote", Type: "http", URL: hs.URL})
			defer r.Close()
			res, err := r.Call(context.Background(), "remote__ask", nil, 5*time.Second)
			if err != nil {
				t.Fatalf("ask = %v; want the server's tool to finish", err)
			}
			if got := resultText(res); got != wantRefused() {
				t.Errorf("server got %q; want %q", got, wantRefused())
			}
		})
	}
}

// TestListChangedOnStandaloneStream: notifications/tools/list_changed on
// the GET stream makes the client list the server's tools again.
func TestListChangedOnStandaloneStream(t *testing.T) {
	s, hs := newStreamServer(t, "standalone")
	r := newRegistry(t, testOpts(t), Spec{Name: "remote", Type: "http", URL: hs.URL})
	defer r.Close()
	<-s.lists // the handshake's
	s.standalone <- []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
	select {
	case <-s.lists:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list after list_changed on the standalone stream")
	}
}

// TestUnsupportedServerRequestsRefusedOverStdio: the same requests from a
// stdio server process in the middle of a tools/call are refused -32601.
func TestUnsupportedServerRequestsRefusedOverStdio(t *testing.T) {
	r := newRegistry(t, testOpts(t), fakeSpec(t, "fake", "FAKE_MCP_EXTRA_TOOL=ask"))
	defer r.Close()
	res, err := r.Call(context.Background(), "fake__ask", nil, 5*time.Second)
	if err != nil {
		t.Fatalf("ask = %v", err)
	}
	if got := resultText(res); got != wantRefused() {
		t.Errorf("server got %q; want %q", got, wantRefused())
	}
}

// TestSSEStreamClosedEarlyIsResumed: a server that ends a tools/call stream
// after a priming event (id ev-1, retry 100 ms) and sends the answer on the
// GET that resumes it; the call used to fail with "stream ended before the
// response" and the server was marked dead.
func TestSSEStreamClosedEarlyIsResumed(t *testing.T) {
	s, hs := newStreamServer(t, "resume")
	r := newRegistry(t, testOpts(t), Spec{Name: "remote", Type: "http", URL: hs.URL})
	defer r.Close()
	res, err := r.Call(context.Background(), "remote__ask", nil, 5*time.Second)
	if err != nil || resultText(res) != "resumed" {
		t.Fatalf("ask = %+v, %v; want the answer from the resumed stream", res, err)
	}
	s.mu.Lock()
	ids := strings.Join(s.lastIDs, ",")
	s.mu.Unlock()
	if !strings.HasSuffix(ids, "ev-1") {
		t.Errorf("Last-Event-ID of the GETs = %q; want the resume to name ev-1", ids)
	}
}

// TestSSEResumeRefusedFailsTheCall: when the server refuses the resuming
// GET, the call fails at once, naming the event it tried to resume from.
func TestSSEResumeRefusedFailsTheCall(t *testing.T) {
	_, hs := newStreamServer(t, "noresume")
	r := newRegistry(t, testOpts(t), Spec{Name: "remote", Type: "http", URL: hs.URL})
	defer r.Close()
	_, err := r.Call(context.Background(), "remote__ask", nil, 5*time.Second)
	var ce *CallError
	if !asCallError(err, &ce) || ce.Kind != CallUnavailable || !strings.Contains(ce.Msg, "resume stream after event ev-1") || !strings.Contains(ce.Msg, "405") {
		t.Fatalf("ask = %v; want unavailable naming the refused resume", err)
	}
}

type refuseTransport struct{}

func (refuseTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("no network in the fuzz test")
}

// FuzzSSEEvents feeds arbitrary bytes to the SSE reader as a request's
// stream: it never panics, keeps the retry delay within its bounds, and
// finds the answer a well-formed event carries wherever it sits.
func FuzzSSEEvents(f *testing.F) {
	f.Add([]byte("id: e1\nretry: 500\ndata: \n\n"))
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"roots/list\"}\n\n"))
	f.Add([]byte(": comment\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"method\":\"notifications/tools/list_changed\"}\r\n\r\n"))
	f.Add([]byte("retry: 99999999999\nid\nid: a\x00b\ndata\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		tr := newHTTP("http://127.0.0.1:1/", nil, &http.Client{Transport: refuseTransport{}}, func() {}, slog.New(slog.DiscardHandler))
		defer tr.close(false)
		want := json.RawMessage("7")
		answer := make(chan *rpcMessage, 1)
		tr.pending["7"] = answer
		reply := []byte("\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n")
		st := sseState{retry: sseDefaultRetry}
		got, _ := tr.readEvents(context.Background(), strings.NewReader(string(stream)+string(reply)), &st, want)
		if st.retry < sseMinRetry || st.retry > sseMaxRetry {
			t.Fatalf("retry = %v; want within [%v, %v]", st.retry, sseMinRetry, sseMaxRetry)
		}
		if !got {
			t.Fatalf("the answer after %q was not found", stream)
		}
	})
}
