package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/testexe"
)

// codexAgent returns the codex-acp binary the README's test command
// installs, or skips loudly.
func codexAgent(t *testing.T) string {
	p := filepath.Join(testexe.ModuleRoot(), "scripts", "node", "node_modules", "@zed-industries", "codex-acp-linux-x64", "bin", "codex-acp")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("SKIP(loud): codex-acp is not installed (%v); run scripts/test.sh or `npm install` in scripts/node to test against it", err)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("SKIP(loud): bubblewrap (bwrap) is missing and codex's Linux sandbox needs it; apt-get install bubblewrap")
	}
	return p
}

// responsesLog is what the loopback OpenAI Responses APIs below share:
// the request bodies they received, in order.
type responsesLog struct {
	mu     sync.Mutex
	bodies []string
}

// record keeps the request's body and returns it with an id for the
// answer; a path other than /responses is answered 404 and ok is false.
func (l *responsesLog) record(w http.ResponseWriter, r *http.Request) (body, id string, ok bool) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	l.mu.Lock()
	l.bodies = append(l.bodies, string(b))
	n := len(l.bodies)
	l.mu.Unlock()
	if !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return "", "", false
	}
	return string(b), fmt.Sprintf("resp_%d", n), true
}

// streamResponse streams answer id: a call of the function name (in
// namespace ns, "" for none) with args, or, when name is "", the text
// "done"; then the completion, with usage.
func streamResponse(w http.ResponseWriter, id, ns, name, args string) {
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
	send("response.created", map[string]any{"response": map[string]any{"id": id, "status": "in_progress"}})
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

// fakeResponses is a loopback OpenAI Responses API (streamed) whose first
// answer runs one shell command through codex's exec_command tool.
type fakeResponses struct {
	responsesLog
	cmd    func(body string) string // the command to run, "" for a plain answer
	script *replyScript             // when set, picks the command instead of cmd
}

func (f *fakeResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, id, ok := f.record(w, r)
	if !ok {
		return
	}
	cmd := ""
	if f.script != nil {
		// The newest input item decides: a user message with a new
		// anchor gets its reply command, a tool's output the final text.
		var req struct {
			Input []json.RawMessage `json:"input"`
		}
		json.Unmarshal([]byte(body), &req)
		for i := len(req.Input) - 1; i >= 0; i-- {
			item := string(req.Input[i])
			if strings.Contains(item, `"function_call_output"`) {
				break
			}
			if strings.Contains(item, `"role":"user"`) {
				c, hang := f.script.next(strings.ReplaceAll(strings.ReplaceAll(item, `\u0060`, "`"), `\"`, `"`))
				if hang {
					<-r.Context().Done()
					return
				}
				if c != "" && strings.Contains(body, `$BUZZ_CLI`) {
					c = strings.Replace(c, "buzz ", `"$BUZZ_CLI" `, 1)
				}
				cmd = c
				break
			}
		}
	} else if !strings.Contains(body, `"function_call_output"`) {
		cmd = f.cmd(body)
	}
	if cmd == "" {
		streamResponse(w, id, "", "", "")
		return
	}
	// As codex's own schema defaults it: no "login": false, so the
	// command runs in a login shell, whose PATH /etc/profile resets.
	args, _ := json.Marshal(map[string]any{"cmd": cmd})
	streamResponse(w, id, "", "exec_command", string(args))
}

// TestCodexACP drives codex-acp, an ACP agent nobody here wrote, through a
// full turn: its model (a loopback fake) runs `buzz messages send` in
// codex's default login shell, where `buzz` on the harness's PATH is not
// found (a login shell takes PATH from /etc/profile), so it goes through
// $BUZZ_CLI as the base prompt says; the reply must reach the relay in the
// mention's thread.
func TestCodexACP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs codex-acp")
	}
	codex := codexAgent(t)
	w := newWorld(t)
	anchor := replyAnchor()
	fr := &fakeResponses{cmd: func(body string) string {
		ch, ev, ok := findAnchor(anchor, body)
		if !ok {
			return ""
		}
		return buzzCommand(strings.ReplaceAll(body, `\"`, `"`)) + " messages send --channel " + ch + " --reply-to " + ev + " --content 'pong from codex'"
	}}
	startCodex(t, w, codex, fr)
	mention := w.mention("ping codex")
	defer func() {
		if t.Failed() {
			fr.mu.Lock()
			defer fr.mu.Unlock()
			for i, b := range fr.bodies {
				if j := strings.Index(b, `"function_call_output"`); j >= 0 {
					t.Logf("request %d tool output: %.1500s", i, b[j:])
				} else {
					t.Logf("request %d: %d bytes, tools %v", i, len(b), strings.Contains(b, "exec_command"))
				}
			}
		}
	}()
	waitFor(t, "codex's reply in the thread", 30*time.Second, func() bool {
		qctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ := w.io.Query(qctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {mention.ID}}})
		return len(evs) == 1 && evs[0].Content == "pong from codex"
	})
	fr.mu.Lock()
	first := fr.bodies[0]
	fr.mu.Unlock()
	// codex-acp answers protocolVersion 1: the sections ride in the prompt.
	for _, want := range []string{"[Base]", "[Context]", "[Buzz event: @mention]"} {
		if !strings.Contains(first, want) {
			t.Errorf("codex's model request lacks %q", want)
		}
	}
}

// looseTempDir is a temp dir whose removal may fail: codex's helpers can
// still be writing there as the test ends.
func looseTempDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "buzzbox-codex-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// codexHome lays out what codex-acp needs to run against a fake model
// provider at baseURL (a Responses API): $HOME/.codex/config.toml naming
// it, and a TMPDIR outside the system temp dir, where codex refuses to lay
// its sandbox helper (and t.TempDir is there). It returns the environment
// entries that point codex at them.
func codexHome(t *testing.T, baseURL string) []string {
	t.Helper()
	home := looseTempDir(t)
	os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
	// sandbox_mode is the user's choice; the network access inside it is
	// the harness's doing.
	config := `model_provider = "fake"
model = "fake-model"
sandbox_mode = "workspace-write"

[model_providers.fake]
name = "fake"
base_url = "` + baseURL + `/v1"
wire_api = "responses"
env_key = "FAKE_KEY"
`
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(looseTempDir(t), "tmp")
	os.MkdirAll(tmp, 0o700)
	return []string{"HOME=" + home, "FAKE_KEY=x", "TMPDIR=" + tmp}
}

// startCodex runs the harness in this process with codex-acp as its agent
// and fr as codex's model provider, until the test ends.
func startCodex(t *testing.T, w *world, codex string, fr *fakeResponses) {
	bin := t.TempDir()
	os.Symlink(testexe.Path(t), filepath.Join(bin, "buzz"))
	srv := httptest.NewServer(fr)
	t.Cleanup(srv.Close)
	env := w.agentEnv(t, append(codexHome(t, srv.URL), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))...)
	w.runHarness(t, env, timing{}, "--agent-command", codex, "--mcp-command", "", "--idle-timeout", "120", "--max-turn-duration", "300")
}

// TestCodexACPConverses: codex-acp holds two turns and a mention that
// arrives while it waits on its model, each reply reaching its thread.
func TestCodexACPConverses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs codex-acp")
	}
	codex := codexAgent(t)
	w := newWorld(t)
	fr := &fakeResponses{script: newReplyScript()}
	startCodex(t, w, codex, fr)
	converse(t, w, fr.script)
}
