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
	"regexp"
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

// fakeResponses is a loopback OpenAI Responses API (streamed) whose first
// answer runs one shell command through codex's exec_command tool.
type fakeResponses struct {
	mu     sync.Mutex
	bodies []string
	cmd    func(body string) string // the command to run, "" for a plain answer
	script *replyScript             // when set, picks the command instead of cmd
}

func (f *fakeResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	cmd := ""
	if f.script != nil {
		// The newest input item decides: a user message with a new
		// anchor gets its reply command, a tool's output the final text.
		var req struct {
			Input []json.RawMessage `json:"input"`
		}
		json.Unmarshal(b, &req)
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
	if cmd != "" {
		// As codex's own schema defaults it: no "login": false, so the
		// command runs in a login shell, whose PATH /etc/profile resets.
		args, _ := json.Marshal(map[string]any{"cmd": cmd})
		item := map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": "exec_command", "arguments": "", "status": "in_progress"}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		done := map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": "exec_command", "arguments": string(args), "status": "completed"}
		send("response.output_item.done", map[string]any{"output_index": 0, "item": done})
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
	anchor := regexp.MustCompile(`buzz messages send --channel ([0-9a-f-]{36}) --reply-to ([0-9a-f]{64})`)
	fr := &fakeResponses{cmd: func(body string) string {
		m := anchor.FindStringSubmatch(strings.ReplaceAll(body, `\u0060`, "`"))
		if m == nil {
			return ""
		}
		return buzzCommand(strings.ReplaceAll(body, `\"`, `"`)) + " messages send --channel " + m[1] + " --reply-to " + m[2] + " --content 'pong from codex'"
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

// startCodex runs the harness in this process with codex-acp as its agent
// and fr as codex's model provider, until the test ends.
func startCodex(t *testing.T, w *world, codex string, fr *fakeResponses) {
	exe := testexe.Path(t)
	bin := t.TempDir()
	os.Symlink(exe, filepath.Join(bin, "buzz"))
	srv := httptest.NewServer(fr)
	t.Cleanup(srv.Close)
	home := looseTempDir(t)
	os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
	// sandbox_mode is the user's choice; the network access inside it is
	// the harness's doing.
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
	// codex refuses to lay its sandbox helper under the temp dir, and
	// t.TempDir is there: point TMPDIR elsewhere.
	tmp := filepath.Join(looseTempDir(t), "tmp")
	os.MkdirAll(tmp, 0o700)
	env := w.harnessEnv("", "HOME="+home, "FAKE_KEY=x", "TMPDIR="+tmp, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	env.Environ = withoutKey(env.Environ, envFakeAgent)
	env.Exe = exe
	c, err := LoadConfig([]string{"--relay-url", w.relay.URL(), "--agent-owner", w.owner.Public().Hex(), "--no-presence",
		"--agent-command", codex, "--mcp-command", "", "--idle-timeout", "120", "--max-turn-duration", "300"}, env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, c, env, testLogger(t), timing{}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-errc:
		case <-time.After(60 * time.Second):
			t.Error("harness did not stop")
		}
	})
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
