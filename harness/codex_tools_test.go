package harness

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// fakeResponsesTool is a loopback OpenAI Responses API (streamed) whose
// first answer to a prompt calls one function tool; call picks the tool
// and its arguments from the request, or returns "" for a plain answer.
type fakeResponsesTool struct {
	responsesLog
	// call returns the namespace (Codex puts each MCP server's tools in
	// one; "" for none), the name and the arguments of the call to make.
	call func(req map[string]any, body string) (namespace, name, args string)
}

func (f *fakeResponsesTool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, id, ok := f.record(w, r)
	if !ok {
		return
	}
	var req map[string]any
	_ = json.Unmarshal([]byte(body), &req)
	ns, name, args := "", "", ""
	if !strings.Contains(body, `"function_call_output"`) {
		ns, name, args = f.call(req, body)
	}
	streamResponse(w, id, ns, name, args)
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
	w := newWorld(t)
	anchor := replyAnchor()
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
		ch, ev, ok := findAnchor(anchor, body)
		if send == "" || !ok {
			return "", "", ""
		}
		args, _ := json.Marshal(map[string]string{"channel": ch, "reply_to": ev, "content": "pong from codex's send_message"})
		ns, name, _ := strings.Cut(send, "/")
		return ns, name, string(args)
	}}
	srv := httptest.NewServer(fr)
	defer srv.Close()
	// No buzz on PATH: only the typed tool can answer.
	stop := w.runHarness(t, w.agentEnv(t, codexHome(t, srv.URL)...), timing{},
		"--agent-command", codex, "--idle-timeout", "120", "--max-turn-duration", "300")
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
	w.awaitAgentReply(t, "codex's reply in the thread", 60*time.Second, mention.ID, nil)
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
