package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
)

// TestSessionLoadAfterRestart: a session of one buzz-agent process is
// listed, loaded and continued by the next one on the same state dir;
// the load replays the history and the model sees the earlier turn.
func TestSessionLoadAfterRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	llm := llmtest.New(t, llmtest.Reply{Text: "first answer"}, llmtest.Reply{Text: "second answer"})
	c := startAgentExe(t, llm, "BUZZ_AGENT_STATE_DIR="+dir)
	c.init()
	sid := c.newSession()
	cwd := ""
	if stop := c.prompt(sid, "remember the word pelican"); stop != "end_turn" {
		t.Fatalf("stop = %s", stop)
	}
	if code := c.close(); code != 0 {
		t.Fatalf("first agent exit = %d", code)
	}
	path := filepath.Join(dir, sid+".json")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode = %v; want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode = %v; want 0700", di.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "test-key") {
		t.Errorf("state file holds the provider key")
	}
	var head struct {
		Cwd string `json:"cwd"`
	}
	json.Unmarshal(b, &head)
	cwd = head.Cwd

	c2 := startAgentExe(t, llm, "BUZZ_AGENT_STATE_DIR="+dir)
	var ini struct {
		AgentCapabilities map[string]any `json:"agentCapabilities"`
	}
	c2.call("initialize", map[string]any{"protocolVersion": 1}, &ini)
	if ini.AgentCapabilities["loadSession"] != true {
		t.Fatalf("capabilities = %v; want loadSession true", ini.AgentCapabilities)
	}
	var list struct {
		Sessions []struct {
			SessionID, Cwd, Title string
		} `json:"sessions"`
	}
	c2.call("session/list", map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != sid || list.Sessions[0].Title != "remember the word pelican" {
		t.Fatalf("session/list = %+v; want %s", list.Sessions, sid)
	}
	c2.call("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, nil)
	users, agents := c2.updates("user_message_chunk"), c2.updates("agent_message_chunk")
	if len(users) != 1 || len(agents) != 1 {
		t.Fatalf("replay: %d user and %d agent chunks; want 1 and 1", len(users), len(agents))
	}
	if txt := users[0]["content"].(map[string]any)["text"]; txt != "remember the word pelican" {
		t.Errorf("replayed user text = %v", txt)
	}
	if c2.prompt(sid, "which word?") != "end_turn" {
		t.Fatal("second turn did not end")
	}
	bodies := llm.Bodies()
	last := string(bodies[len(bodies)-1])
	for _, want := range []string{"remember the word pelican", "first answer", "which word?"} {
		if !strings.Contains(last, want) {
			t.Errorf("model request after load lacks %q: %s", want, last)
		}
	}
}

// TestAttackLoadSessionPathEscape: a session id is a file name in the
// state dir; one that names a path elsewhere is an unknown session, and
// nothing outside the dir is read.
func TestAttackLoadSessionPathEscape(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	outside := filepath.Join(filepath.Dir(dir), "ses_0123456789abcdef.json")
	os.WriteFile(outside, []byte(`{"version":1}`), 0o600)
	c := startAgent(t, nil, "BUZZ_AGENT_STATE_DIR="+dir)
	c.init()
	for _, id := range []string{"../ses_0123456789abcdef", "ses_0123456789abcdef/../../x", "/etc/passwd", ""} {
		code, msg := c.callErr("session/load", map[string]any{"sessionId": id, "cwd": t.TempDir(), "mcpServers": []any{}})
		if code != -32602 || !strings.Contains(msg, "unknown session") {
			t.Errorf("load %q = %d %s; want -32602 unknown session", id, code, msg)
		}
	}
}

// TestBugCorruptSessionStateCrashes: a truncated state file, one of
// another version and one that is not JSON are reported by session/load
// with what to do, skipped by session/list, and the agent keeps serving.
func TestBugCorruptSessionStateCrashes(t *testing.T) {
	dir := t.TempDir()
	good := `{"version":1,"sessionId":"ses_00000000000000aa","cwd":"/tmp","history":[{"role":"user","text":"hi"}]}`
	files := map[string]string{
		"ses_00000000000000aa": good,
		"ses_00000000000000bb": good[:len(good)/2],
		"ses_00000000000000cc": `{"version":7,"sessionId":"ses_00000000000000cc","cwd":"/tmp","history":[]}`,
		"ses_00000000000000dd": "\x00\x01garbage",
		"ses_00000000000000ee": `{"version":1,"sessionId":"ses_00000000000000ee","cwd":"/tmp","history":[{"role":"tool","callId":"nope"}]}`,
	}
	for id, body := range files {
		if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := startAgent(t, llmtest.New(t, llmtest.Reply{Text: "ok"}), "BUZZ_AGENT_STATE_DIR="+dir)
	c.init()
	for id, want := range map[string]string{
		"ses_00000000000000bb": "damaged or truncated",
		"ses_00000000000000cc": "version 7 is not 1",
		"ses_00000000000000dd": "damaged or truncated",
		"ses_00000000000000ee": "unknown call",
	} {
		_, msg := c.callErr("session/load", map[string]any{"sessionId": id, "cwd": t.TempDir(), "mcpServers": []any{}})
		if !strings.Contains(msg, want) {
			t.Errorf("load %s = %q; want it to say %q", id, msg, want)
		}
	}
	var list struct {
		Sessions []struct{ SessionID string } `json:"sessions"`
	}
	c.call("session/list", map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != "ses_00000000000000aa" {
		t.Errorf("session/list = %+v; want only the good session", list.Sessions)
	}
	c.call("session/load", map[string]any{"sessionId": "ses_00000000000000aa", "cwd": t.TempDir(), "mcpServers": []any{}}, nil)
	if c.prompt("ses_00000000000000aa", "again") != "end_turn" {
		t.Error("loaded session did not take a prompt")
	}
}

// FuzzParseState: any bytes in a state file give a session or an error,
// never a panic; what parses survives a write and read back unchanged.
func FuzzParseState(f *testing.F) {
	f.Add([]byte(`{"version":1,"sessionId":"ses_00000000000000aa","cwd":"/tmp","history":[{"role":"user","text":"hi"},{"role":"assistant","calls":[{"id":"c1","name":"x__y","args":{}}]},{"role":"tool","callId":"c1","parts":[{"text":"out"},{"imageData":"AA==","imageMime":"image/png"}]}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"sessionId":"../x"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, h, err := parseState(b)
		if err != nil {
			return
		}
		sf.History = toState(h)
		again, err := json.Marshal(sf)
		if err != nil {
			t.Fatal(err)
		}
		sf2, h2, err := parseState(again)
		if err != nil {
			t.Fatalf("re-read of a written state failed: %v", err)
		}
		if len(h2) != len(h) || sf2.SessionID != sf.SessionID {
			t.Fatalf("round trip changed the session: %d items -> %d", len(h), len(h2))
		}
	})
}

// TestSessionStatesPruned: the state dir keeps the newest
// maxKeptSessions files; making a session removes the oldest beyond.
func TestSessionStatesPruned(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	for i := range maxKeptSessions + 5 {
		p := filepath.Join(dir, fmt.Sprintf("ses_%016x.json", i))
		os.WriteFile(p, []byte(`{}`), 0o600)
		os.Chtimes(p, old, old.Add(time.Duration(i)*time.Second))
	}
	c := startAgent(t, nil, "BUZZ_AGENT_STATE_DIR="+dir)
	c.init()
	sid := c.newSession()
	ents, _ := os.ReadDir(dir)
	if len(ents) != maxKeptSessions {
		t.Errorf("%d state files after a new session; want %d", len(ents), maxKeptSessions)
	}
	if _, err := os.Stat(filepath.Join(dir, sid+".json")); err != nil {
		t.Errorf("the new session's state is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ses_%016x.json", 0))); err == nil {
		t.Errorf("the oldest state was kept")
	}
}

// TestBugSteerDuringLastCallLost: a steer accepted while the model was
// answering its last call of the turn (text, no tool calls) was dropped:
// the turn ended without another round, and the steer's text never
// reached the model although the steer request had succeeded.
func TestBugSteerDuringLastCallLost(t *testing.T) {
	gate, arrived := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	srv := llmtest.New(t)
	srv.SetHandler(func(req map[string]any) llmtest.Reply {
		if calls.Add(1) == 1 {
			close(arrived)
			<-gate
			return llmtest.Reply{Text: "first"}
		}
		return llmtest.Reply{Text: "second"}
	})
	c := startAgent(t, srv)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(gate) }) })
	sid := c.newSession()
	pid := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "go"}}})
	run := ""
	for run == "" {
		f := c.next()
		c.notes = append(c.notes, f)
		if m, ok := f.Params.Update["_meta"].(map[string]any); ok {
			if g, ok := m["goose"].(map[string]any); ok {
				run, _ = g["activeRunId"].(string)
			}
		}
	}
	// The steer must come while the model is answering, not before the
	// turn's first call (it would ride in that call's request).
	<-arrived
	c.call("_goose/unstable/session/steer", map[string]any{"sessionId": sid, "expectedRunId": run,
		"prompt": []map[string]any{{"type": "text", "text": "STEERED"}}}, nil)
	once.Do(func() { close(gate) })
	if f := c.reply(pid); !strings.Contains(string(f.Result), "end_turn") {
		t.Fatalf("prompt = %s", f.raw)
	}
	bodies := srv.Bodies()
	if len(bodies) != 2 || !strings.Contains(string(bodies[1]), "STEERED") {
		t.Errorf("the steer did not reach the model: %d requests", len(bodies))
	}
}
