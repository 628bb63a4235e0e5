// Package llmtest is a fake LLM endpoint for tests: a real HTTP server on
// 127.0.0.1 that speaks the Anthropic Messages, OpenAI Chat Completions and
// Responses wire formats, streamed (SSE) or not, answering from a script of
// replies and recording every request body. It is test support only.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Call is a scripted tool call.
type Call struct {
	ID   string
	Name string
	Args string // JSON object text; empty means {}
}

// Reply is one scripted answer.
type Reply struct {
	Text      string
	Reasoning string
	Calls     []Call
	// Stop overrides the stop reason (wire spelling of the dialect); empty
	// derives end_turn/tool_use.
	Stop string
	// InputTokens/OutputTokens are reported usage; zero omits usage.
	InputTokens, OutputTokens int
	// Status, when non-zero and not 200, answers with that status and Body.
	Status int
	// Body, when set, is sent verbatim (with Status or 200).
	Body string
	// Header adds response headers.
	Header map[string]string
	// Hang blocks the reply until the request is abandoned.
	Hang bool
	// ReasoningDetails is sent as OpenRouter reasoning_details (chat only).
	ReasoningDetails string
}

// Server is the fake endpoint.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Reply
	fallback *Reply
	bodies   [][]byte
	paths    []string
	headers  []http.Header
	hang     chan struct{}
	handler  func(req map[string]any) Reply
	keep     bool
}

// New starts a server answering with script in order; when the script runs
// out it answers with a plain "done" end_turn text. Closed at test end.
func New(t testing.TB, script ...Reply) *Server {
	s := &Server{script: script, hang: make(chan struct{}), keep: true}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.hang)
		s.Server.CloseClientConnections()
		s.Server.Close()
	})
	return s
}

// Push appends replies to the script.
func (s *Server) Push(r ...Reply) {
	s.mu.Lock()
	s.script = append(s.script, r...)
	s.mu.Unlock()
}

// SetFallback sets the reply used once the script is exhausted.
func (s *Server) SetFallback(r Reply) {
	s.mu.Lock()
	s.fallback = &r
	s.mu.Unlock()
}

// SetHandler makes the server compute each reply from the decoded request
// body (after the script runs out); safe for concurrent sessions.
func (s *Server) SetHandler(h func(req map[string]any) Reply) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

// DropBodies stops recording request bodies (benchmarks with many requests).
func (s *Server) DropBodies() {
	s.mu.Lock()
	s.keep = false
	s.mu.Unlock()
}

// Requests returns the decoded JSON bodies received so far.
func (s *Server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, len(s.bodies))
	for i, b := range s.bodies {
		_ = json.Unmarshal(b, &out[i])
	}
	return out
}

// Bodies returns the raw request bodies received so far.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Paths returns the request paths received so far.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// Headers returns the request headers received so far.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// Count returns how many requests arrived.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	if s.keep {
		s.bodies = append(s.bodies, body)
		s.paths = append(s.paths, r.URL.Path)
		s.headers = append(s.headers, r.Header.Clone())
	} else {
		s.bodies = append(s.bodies, nil)
		s.paths = append(s.paths, r.URL.Path)
		s.headers = append(s.headers, nil)
	}
	rep := Reply{Text: "done"}
	handler := s.handler
	if len(s.script) > 0 {
		rep = s.script[0]
		s.script = s.script[1:]
		handler = nil
	} else if s.fallback != nil {
		rep = *s.fallback
	}
	s.mu.Unlock()
	if handler != nil {
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		rep = handler(req)
	}

	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Hang {
		select {
		case <-r.Context().Done():
		case <-s.hang:
		}
		return
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.WriteHeader(rep.Status)
		io.WriteString(w, rep.Body)
		return
	}
	if rep.Body != "" {
		if strings.HasPrefix(rep.Body, "data:") || strings.HasPrefix(rep.Body, "event:") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		io.WriteString(w, rep.Body)
		return
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	var d dialect
	switch {
	case strings.HasSuffix(r.URL.Path, "/messages"):
		d = anthropic{}
	case strings.HasSuffix(r.URL.Path, "/responses"):
		d = responses{}
	default:
		d = chat{}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(d.whole(rep))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	for _, ev := range d.events(rep) {
		var b bytes.Buffer
		if ev.name != "" {
			fmt.Fprintf(&b, "event: %s\n", ev.name)
		}
		if s, ok := ev.data.(string); ok {
			fmt.Fprintf(&b, "data: %s\n\n", s)
		} else {
			enc, _ := json.Marshal(ev.data)
			fmt.Fprintf(&b, "data: %s\n\n", enc)
		}
		w.Write(b.Bytes())
		if fl != nil {
			fl.Flush()
		}
	}
}

type event struct {
	name string
	data any
}

type obj = map[string]any

type dialect interface {
	whole(Reply) any
	events(Reply) []event
}

func args(c Call) string {
	if c.Args == "" {
		return "{}"
	}
	return c.Args
}

func stopOr(r Reply, end, tool string) string {
	if r.Stop != "" {
		return r.Stop
	}
	if len(r.Calls) > 0 {
		return tool
	}
	return end
}

type anthropic struct{}

// msgSeq numbers the fake's Anthropic messages.
var msgSeq atomic.Int64

func (anthropic) whole(r Reply) any {
	var content []obj
	if r.Reasoning != "" {
		content = append(content, obj{"type": "thinking", "thinking": r.Reasoning, "signature": "sig"})
	}
	if r.Text != "" {
		content = append(content, obj{"type": "text", "text": r.Text})
	}
	for _, c := range r.Calls {
		content = append(content, obj{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(args(c))})
	}
	out := obj{"type": "message", "role": "assistant", "content": content, "stop_reason": stopOr(r, "end_turn", "tool_use")}
	if r.InputTokens > 0 || r.OutputTokens > 0 {
		out["usage"] = obj{"input_tokens": r.InputTokens, "output_tokens": r.OutputTokens}
	}
	return out
}

func (anthropic) events(r Reply) []event {
	ev := func(typ string, kv obj) event {
		kv["type"] = typ
		return event{typ, kv}
	}
	// A real stream's message_start names the message; clients key
	// their own message ids on it.
	start := obj{"id": fmt.Sprintf("msg_%d", msgSeq.Add(1)), "type": "message", "role": "assistant", "content": []any{}}
	if r.InputTokens > 0 {
		start["usage"] = obj{"input_tokens": r.InputTokens, "output_tokens": 1}
	}
	out := []event{ev("message_start", obj{"message": start}), ev("ping", obj{})}
	i := 0
	if r.Reasoning != "" {
		out = append(out, ev("content_block_start", obj{"index": i, "content_block": obj{"type": "thinking", "thinking": ""}}))
		for _, p := range split(r.Reasoning) {
			out = append(out, ev("content_block_delta", obj{"index": i, "delta": obj{"type": "thinking_delta", "thinking": p}}))
		}
		out = append(out, ev("content_block_delta", obj{"index": i, "delta": obj{"type": "signature_delta", "signature": "sig"}}))
		out = append(out, ev("content_block_stop", obj{"index": i}))
		i++
	}
	if r.Text != "" {
		out = append(out, ev("content_block_start", obj{"index": i, "content_block": obj{"type": "text", "text": ""}}))
		for _, p := range split(r.Text) {
			out = append(out, ev("content_block_delta", obj{"index": i, "delta": obj{"type": "text_delta", "text": p}}))
		}
		out = append(out, ev("content_block_stop", obj{"index": i}))
		i++
	}
	for _, c := range r.Calls {
		out = append(out, ev("content_block_start", obj{"index": i, "content_block": obj{"type": "tool_use", "id": c.ID, "name": c.Name, "input": obj{}}}))
		for _, p := range split(args(c)) {
			out = append(out, ev("content_block_delta", obj{"index": i, "delta": obj{"type": "input_json_delta", "partial_json": p}}))
		}
		out = append(out, ev("content_block_stop", obj{"index": i}))
		i++
	}
	md := obj{"delta": obj{"stop_reason": stopOr(r, "end_turn", "tool_use")}}
	if r.OutputTokens > 0 {
		md["usage"] = obj{"output_tokens": r.OutputTokens}
	}
	out = append(out, ev("message_delta", md), ev("message_stop", obj{}))
	return out
}

// split cuts s into a few pieces so deltas are really incremental.
func split(s string) []string {
	if len(s) < 4 {
		return []string{s}
	}
	n := len(s) / 3
	return []string{s[:n], s[n : 2*n], s[2*n:]}
}

type chat struct{}

func chatUsage(r Reply) any {
	if r.InputTokens == 0 && r.OutputTokens == 0 {
		return nil
	}
	return obj{"prompt_tokens": r.InputTokens, "completion_tokens": r.OutputTokens, "total_tokens": r.InputTokens + r.OutputTokens}
}

func (chat) whole(r Reply) any {
	msg := obj{"role": "assistant", "content": r.Text}
	if r.Reasoning != "" {
		msg["reasoning_content"] = r.Reasoning
	}
	if r.ReasoningDetails != "" {
		msg["reasoning_details"] = json.RawMessage(r.ReasoningDetails)
	}
	if len(r.Calls) > 0 {
		var calls []obj
		for _, c := range r.Calls {
			calls = append(calls, obj{"id": c.ID, "type": "function", "function": obj{"name": c.Name, "arguments": args(c)}})
		}
		msg["tool_calls"] = calls
	}
	out := obj{"choices": []obj{{"index": 0, "message": msg, "finish_reason": stopOr(r, "stop", "tool_calls")}}}
	if u := chatUsage(r); u != nil {
		out["usage"] = u
	}
	return out
}

func (chat) events(r Reply) []event {
	chunk := func(delta obj, finish any) event {
		return event{"", obj{"choices": []obj{{"index": 0, "delta": delta, "finish_reason": finish}}, "usage": nil}}
	}
	out := []event{chunk(obj{"role": "assistant"}, nil)}
	for _, p := range split(r.Reasoning) {
		if p != "" {
			out = append(out, chunk(obj{"reasoning_content": p}, nil))
		}
	}
	if r.ReasoningDetails != "" {
		out = append(out, chunk(obj{"reasoning_details": json.RawMessage(r.ReasoningDetails)}, nil))
	}
	for _, p := range split(r.Text) {
		if p != "" {
			out = append(out, chunk(obj{"content": p}, nil))
		}
	}
	for i, c := range r.Calls {
		out = append(out, chunk(obj{"tool_calls": []obj{{"index": i, "id": c.ID, "type": "function", "function": obj{"name": c.Name, "arguments": ""}}}}, nil))
		for _, p := range split(args(c)) {
			out = append(out, chunk(obj{"tool_calls": []obj{{"index": i, "function": obj{"arguments": p}}}}, nil))
		}
	}
	out = append(out, chunk(obj{}, stopOr(r, "stop", "tool_calls")))
	if u := chatUsage(r); u != nil {
		out = append(out, event{"", obj{"choices": []obj{}, "usage": u}})
	}
	return append(out, event{"", "[DONE]"})
}

type responses struct{}

func (responses) output(r Reply) []obj {
	var out []obj
	if r.Reasoning != "" {
		out = append(out, obj{"type": "reasoning", "id": "rs_1", "summary": []obj{{"type": "summary_text", "text": r.Reasoning}}})
	}
	if r.Text != "" {
		out = append(out, obj{"type": "message", "id": "msg_1", "role": "assistant", "content": []obj{{"type": "output_text", "text": r.Text}}})
	}
	for _, c := range r.Calls {
		out = append(out, obj{"type": "function_call", "id": "fc_" + c.ID, "call_id": c.ID, "name": c.Name, "arguments": args(c)})
	}
	return out
}

func (d responses) whole(r Reply) any {
	out := obj{"status": "completed", "output": d.output(r)}
	if r.Stop == "max_output_tokens" {
		out["status"] = "incomplete"
		out["incomplete_details"] = obj{"reason": "max_output_tokens"}
	}
	if r.InputTokens > 0 || r.OutputTokens > 0 {
		out["usage"] = obj{"input_tokens": r.InputTokens, "output_tokens": r.OutputTokens, "total_tokens": r.InputTokens + r.OutputTokens}
	}
	return out
}

func (d responses) events(r Reply) []event {
	ev := func(typ string, kv obj) event {
		kv["type"] = typ
		return event{typ, kv}
	}
	out := []event{ev("response.created", obj{"response": obj{"status": "in_progress"}})}
	for _, p := range split(r.Reasoning) {
		if p != "" {
			out = append(out, ev("response.reasoning_summary_text.delta", obj{"item_id": "rs_1", "delta": p}))
		}
	}
	for _, p := range split(r.Text) {
		if p != "" {
			out = append(out, ev("response.output_text.delta", obj{"item_id": "msg_1", "delta": p}))
		}
	}
	for _, it := range d.output(r) {
		out = append(out, ev("response.output_item.done", obj{"item": it}))
	}
	whole := d.whole(r).(obj)
	typ := "response.completed"
	if whole["status"] == "incomplete" {
		typ = "response.incomplete"
	}
	return append(out, ev(typ, obj{"response": whole}))
}
