package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/testexe"
)

// fakeResponsesTool is a loopback OpenAI Responses API (streamed) whose
// first answer to a prompt calls one function tool; call picks the tool
// and its arguments from the request, or returns "" for a plain answer.
type fakeResponsesTool struct {
	mu     sync.Mutex
	bodies []string
	// call returns the namespace (Codex puts each MCP server's tools in
	// one; "" for none), the name and the arguments of the call to make.
	call func(req map[string]any, body string) (namespace, name, args string)
}

func (f *fakeResponsesTool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	body := string(b)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	n := len(f.bodies)
	f.mu.Unlock()
	if !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var req map[string]any
	_ = json.Unmarshal(b, &req)
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(typ string, v map[string]any) {
		v["type"] = typ
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
		if flusher != nil {
			flusher.Flush()
		}
	}
	id := fmt.Sprintf("resp_%d", n)
	send("response.created", map[string]any{"response": map[string]any{"id": id, "status": "in_progress"}})
	ns, name, args := "", "", ""
	if !strings.Contains(body, `"function_call_output"`) {
		ns, name, args = f.call(req, body)
	}
	if name != "" {
		item := map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": name, "arguments": "", "status": "in_progress"}
		if ns != "" {
			item["namespace"] = ns
		}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		item["arguments"], item["status"] = args, "completed"
		send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	} else {
		msg := map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "in_progress", "content": []any{}}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": msg})
		send("response.output_text.delta", map[string]any{"item_id": "msg_" + id, "output_index": 0, "content_index": 0, "delta": "done"})
		msg["status"] = "completed"
		msg["content"] = []any{map[string]any{"type": "output_text", "text": "done", "annotations": []any{}}}
		send("response.output_item.done", map[string]any{"output_index": 0, "item": msg})
	}
	send("response.completed", map[string]any{"response": map[string]any{"id": id, "status": "completed",
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}})
}

// responsesToolNames lists the function tools a Responses request offers,
// a namespaced one as "namespace/name".
func responsesToolNames(req map[string]any) []string {
	var out []string
	tools, _ := req["tools"].([]any)
	for _, x := range tools {
		m, _ := x.(map[string]any)
		name, _ := m["name"].(string)
		if m["type"] != "namespace" {
			out = append(out, name)
			continue
		}
		inner, _ := m["tools"].([]any)
		for _, y := range inner {
			if n, ok := y.(map[string]any)["name"].(string); ok {
				out = append(out, name+"/"+n)
			}
		}
	}
	return out
}

// TestCodexRepliesThroughWorkspaceTool runs codex-acp (Codex's agent,
// configured through $HOME/.codex/config.toml with a Responses provider)
// with buzz-dev-mcp as its MCP server. Codex offers its model
// send_message and not the host hooks; the model answers through
// send_message without the shell, and the reply guard posts nothing more.
func TestCodexRepliesThroughWorkspaceTool(t *testing.T) {
	if testing.Short() {
		t.Skip("runs codex-acp")
	}
	codex := codexAgent(t)
	exe := testexe.Path(t)
	w := newWorld(t)
	anchor := regexp.MustCompile(`--channel ([0-9a-f-]{36}) --reply-to ([0-9a-f]{64})`)
	var offeredMu sync.Mutex
	var offered []string
	fr := &fakeResponsesTool{call: func(req map[string]any, body string) (string, string, string) {
		names := responsesToolNames(req)
		offeredMu.Lock()
		offered = append(offered, names...)
		offeredMu.Unlock()
		send := ""
		for _, n := range names {
			if strings.HasSuffix(n, "/send_message") {
				send = n
			}
		}
		m := anchor.FindStringSubmatch(strings.ReplaceAll(body, `\u0060`, "`"))
		if send == "" || m == nil {
			return "", "", ""
		}
		args, _ := json.Marshal(map[string]string{"channel": m[1], "reply_to": m[2], "content": "pong from codex's send_message"})
		ns, name, _ := strings.Cut(send, "/")
		return ns, name, string(args)
	}}
	srv := httptest.NewServer(fr)
	defer srv.Close()
	home := looseTempDir(t)
	os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
	config := `model_provider = "fake"
model = "fake-model"
sandbox_mode = "workspace-write"

[model_providers.fake]
name = "fake"
base_url = "` + srv.URL + `/v1"
wire_api = "responses"
env_key = "FAKE_KEY"
`
	os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(config), 0o600)
	tmp := filepath.Join(looseTempDir(t), "tmp")
	os.MkdirAll(tmp, 0o700)
	// No buzz on PATH: only the typed tool can answer.
	env := w.harnessEnv("", "HOME="+home, "FAKE_KEY=x", "TMPDIR="+tmp)
	env.Environ = withoutKey(env.Environ, envFakeAgent)
	env.Exe = exe
	c, err := LoadConfig([]string{"--relay-url", w.relay.URL(), "--agent-owner", w.owner.Public().Hex(), "--no-presence",
		"--agent-command", codex, "--idle-timeout", "120", "--max-turn-duration", "300"}, env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, c, env, testLogger(t), timing{}) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-errc:
		case <-time.After(60 * time.Second):
			t.Error("harness did not stop")
		}
	}
	defer stop()
	mention := w.mention("ping codex")
	defer func() {
		if t.Failed() {
			fr.mu.Lock()
			defer fr.mu.Unlock()
			for i, b := range fr.bodies {
				if j := strings.Index(b, `"mcp__buzz_dev_mcp"`); j >= 0 {
					t.Logf("request %d: %.1500s", i, b[max(j-300, 0):])
				}
			}
		}
	}()
	agentMessages := func() []*nostr.Event {
		qctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ := w.io.Query(qctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"h": {w.channel}}})
		return evs
	}
	waitFor(t, "codex's reply in the thread", 60*time.Second, func() bool {
		for _, e := range agentMessages() {
			if e.Tags.FindWithValue("e", mention.ID) != nil {
				return true
			}
		}
		return false
	})
	waitFor(t, "reactions cleaned up", 30*time.Second, func() bool { return w.seenReactions() == 0 })
	stop()
	offeredMu.Lock()
	tools := append([]string(nil), offered...)
	offeredMu.Unlock()
	for _, n := range tools {
		if strings.Contains(n, "_Stop") || strings.Contains(n, "_PostCompact") {
			t.Errorf("codex offered its model the host hook %s", n)
		}
	}
	evs := agentMessages()
	if len(evs) != 1 || evs[0].Content != "pong from codex's send_message" {
		var texts []string
		for _, e := range evs {
			texts = append(texts, e.Content)
		}
		t.Errorf("agent messages %q; want the one send_message posted (tools offered: %v)", texts, tools)
	}
}
