package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/agent/mcpclient/mcptest"
	"buzzbox/internal/proc"
	"buzzbox/internal/testexe"
)

func TestMain(m *testing.M) {
	if os.Getenv(mcptest.EnvSwitch) == "1" {
		os.Exit(mcptest.Main(os.Stdin, os.Stdout, os.Environ()))
	}
	os.Exit(testexe.RunTests(m))
}

// tWriter sends logs to the test's output and, when keep is set, keeps
// them for assertions.
type tWriter struct {
	t    testing.TB
	keep *logBuffer
}

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	if w.keep != nil {
		w.keep.mu.Lock()
		w.keep.b.Write(p)
		w.keep.mu.Unlock()
	}
	return len(p), nil
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// frame is one JSON-RPC message the agent wrote.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		SessionID string         `json:"sessionId"`
		Update    map[string]any `json:"update"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

// client drives an in-process agent over pipes, as an ACP client would.
type client struct {
	t      testing.TB
	in     io.WriteCloser
	frames chan frame
	exit   chan int
	nextID int
	notes  []frame // notifications seen while waiting for replies
	LLM    *llmtest.Server
	logs   *logBuffer

	routeMu sync.Mutex
	routes  map[int]chan frame // used by benchmarks that drain frames elsewhere
}

// route returns a channel that receives the reply to id; only for callers
// that run drainRouted instead of reading frames themselves.
func (c *client) route(id int) chan frame {
	c.routeMu.Lock()
	defer c.routeMu.Unlock()
	if c.routes == nil {
		c.routes = map[int]chan frame{}
	}
	ch, ok := c.routes[id]
	if !ok {
		ch = make(chan frame, 1)
		c.routes[id] = ch
	}
	return ch
}

// drainRouted reads every frame, handing replies to route channels.
func (c *client) drainRouted() {
	for f := range c.frames {
		if f.Method != "" {
			continue
		}
		var id int
		json.Unmarshal(f.ID, &id)
		c.route(id) <- f
	}
}

// baseEnv is the environment of the agent under test: the chat dialect
// against the fake LLM, short timeouts as upstream's tests use.
func baseEnv(t testing.TB, llmURL string) []string {
	return []string{
		"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=test-key",
		"OPENAI_COMPAT_MODEL=test-model", "OPENAI_COMPAT_BASE_URL=" + llmURL,
		"BUZZ_AGENT_LLM_TIMEOUT_SECS=5", "BUZZ_AGENT_TOOL_TIMEOUT_SECS=5", "BUZZ_AGENT_MAX_ROUNDS=8",
		"BUZZ_AGENT_MCP_INIT_TIMEOUT_SECS=2", "BUZZ_AGENT_MCP_RESTART_BASE_MS=10",
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
	}
}

// startAgentExe runs the built buzz-agent as a child process with env
// overrides KEY=VALUE applied over baseEnv, driven over its real stdin and
// stdout; c.exit yields its exit status. It is stopped at test end.
func startAgentExe(t testing.TB, llm *llmtest.Server, overrides ...string) *client {
	t.Helper()
	if llm == nil {
		llm = llmtest.New(t)
	}
	environ := baseEnv(t, llm.URL)
	for _, kv := range overrides {
		k, v, _ := strings.Cut(kv, "=")
		environ = proc.WithEnv(environ, k, v)
	}
	cmd := exec.Command(testexe.Link(t, "buzz-agent"))
	cmd.Env = environ
	cmd.Dir = t.TempDir()
	c := &client{t: t, frames: make(chan frame, 1024), exit: make(chan int, 1), LLM: llm, logs: &logBuffer{}}
	cmd.Stderr = tWriter{t, c.logs}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.in = in
	// Ends at the agent's stdout EOF; then the process is reaped.
	go func() {
		defer close(c.frames)
		br := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			var f frame
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Errorf("agent wrote a non-JSON line to stdout: %q", line)
				continue
			}
			f.raw = line
			c.frames <- f
		}
		cmd.Wait()
		c.exit <- cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		c.in.Close()
		go func() {
			for range c.frames {
			}
		}()
		select {
		case code := <-c.exit:
			c.exit <- code
		case <-time.After(20 * time.Second):
			t.Error("agent did not exit after stdin closed")
			cmd.Process.Kill()
		}
	})
	return c
}

// startAgent runs Main in-process with env overrides KEY=VALUE applied
// over baseEnv; the agent ends (and is checked for leaks) at test end.
func startAgent(t testing.TB, llm *llmtest.Server, overrides ...string) *client {
	t.Helper()
	if llm == nil {
		llm = llmtest.New(t)
	}
	environ := baseEnv(t, llm.URL)
	for _, kv := range overrides {
		k, v, _ := strings.Cut(kv, "=")
		environ = proc.WithEnv(environ, k, v)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, frames: make(chan frame, 1024), exit: make(chan int, 1), LLM: llm, logs: &logBuffer{}}
	env := proc.Env{Stdin: inR, Stdout: outW, Stderr: tWriter{t, c.logs}, Environ: environ, Dir: t.TempDir()}
	before := len(ourGoroutines())
	go func() {
		code := Main(context.Background(), nil, env)
		outW.Close()
		inR.Close()
		c.exit <- code
	}()
	go func() {
		defer close(c.frames)
		br := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			var f frame
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Errorf("agent wrote a non-JSON line to stdout: %q", line)
				continue
			}
			f.raw = line
			c.frames <- f
		}
	}()
	t.Cleanup(func() {
		c.close()
		checkGoroutines(t, before)
	})
	return c
}

// ourGoroutines returns the stacks of goroutines started by buzzbox code
// (HTTP servers and client connections of the fake LLM are not ours).
func ourGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		// proc's spawner lives as long as the process, by design.
		if strings.Contains(g, "created by buzzbox/") && !strings.Contains(g, "buzzbox/internal/proc.spawnLoop") {
			out = append(out, g)
		}
	}
	return out
}

// checkGoroutines fails when goroutines started by our code outlive the test.
func checkGoroutines(t testing.TB, before int) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		gs := ourGoroutines()
		if len(gs) <= before {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("leaked goroutines: %d before, %d after:\n%s", before, len(gs), strings.Join(gs, "\n\n"))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *client) close() int {
	c.in.Close()
	select {
	case code := <-c.exit:
		c.exit <- code
		for range c.frames {
		}
		return code
	case <-time.After(10 * time.Second):
		c.t.Fatal("agent did not exit after stdin closed")
		return -1
	}
}

func (c *client) sendRaw(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write to agent: %v", err)
	}
}

// request sends a request and returns its id.
func (c *client) request(method string, params any) int {
	c.t.Helper()
	c.nextID++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	c.sendRaw(string(b))
	return c.nextID
}

func (c *client) notify(method string, params any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	c.sendRaw(string(b))
}

// next returns the next frame or fails after a generous timeout.
func (c *client) next() frame {
	c.t.Helper()
	select {
	case f, ok := <-c.frames:
		if !ok {
			c.t.Fatal("agent closed stdout")
		}
		return f
	case <-time.After(20 * time.Second):
		c.t.Fatal("no frame from agent within 20s")
		return frame{}
	}
}

// reply waits for the response to id, keeping notifications in c.notes.
func (c *client) reply(id int) frame {
	c.t.Helper()
	want := fmt.Sprint(id)
	for {
		f := c.next()
		if f.Method != "" {
			c.notes = append(c.notes, f)
			continue
		}
		if string(f.ID) == want {
			return f
		}
		c.t.Fatalf("unexpected reply %s while waiting for %d", f.raw, id)
	}
}

// call sends a request and returns its successful result.
func (c *client) call(method string, params any, result any) {
	c.t.Helper()
	f := c.reply(c.request(method, params))
	if f.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, f.Error.Code, f.Error.Message)
	}
	if result != nil {
		if err := json.Unmarshal(f.Result, result); err != nil {
			c.t.Fatal(err)
		}
	}
}

// callErr sends a request that must fail and returns the error.
func (c *client) callErr(method string, params any) (int, string) {
	c.t.Helper()
	f := c.reply(c.request(method, params))
	if f.Error == nil {
		c.t.Fatalf("%s succeeded (%s); want an error", method, f.Result)
	}
	return f.Error.Code, f.Error.Message
}

func (c *client) init() {
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, nil)
}

// newSession opens a session in a temp cwd with the given MCP servers.
func (c *client) newSession(servers ...map[string]any) string {
	c.t.Helper()
	if servers == nil {
		servers = []map[string]any{}
	}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	c.call("session/new", map[string]any{"cwd": c.t.TempDir(), "mcpServers": servers}, &res)
	return res.SessionID
}

// prompt sends one text prompt and returns the stop reason.
func (c *client) prompt(sid, text string) string {
	c.t.Helper()
	var res struct {
		StopReason string `json:"stopReason"`
	}
	c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": text}}}, &res)
	return res.StopReason
}

// updates returns the session/update payloads seen so far, optionally of
// one kind, and forgets nothing.
func (c *client) updates(kind string) []map[string]any {
	var out []map[string]any
	for _, f := range c.notes {
		if f.Method == "session/update" && (kind == "" || f.Params.Update["sessionUpdate"] == kind) {
			out = append(out, f.Params.Update)
		}
	}
	return out
}

// fakeServer is an MCP server entry running this test binary as the fake.
func fakeServer(t testing.TB, name string, env ...string) map[string]any {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	envList := []map[string]string{{"name": mcptest.EnvSwitch, "value": "1"}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		envList = append(envList, map[string]string{"name": k, "value": v})
	}
	return map[string]any{"name": name, "command": exe, "args": []string{}, "env": envList}
}

// messages returns the chat messages of the n-th LLM request.
func messages(t testing.TB, srv *llmtest.Server, n int) []map[string]any {
	t.Helper()
	reqs := srv.Requests()
	if n >= len(reqs) {
		t.Fatalf("only %d LLM requests; want #%d", len(reqs), n)
	}
	var out []map[string]any
	for _, m := range reqs[n]["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

// waitFor polls cond; the agent runs in other goroutines and processes, so
// there is no event to wait on.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func procEnv(environ []string, stderr io.Writer) proc.Env {
	return proc.Env{Stdin: strings.NewReader(""), Stderr: stderr, Environ: environ}
}
