package devmcp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"buzzbox/internal/testexe"
)

// mcpProc is the built buzz-dev-mcp binary running as a child, driven over
// its real stdin and stdout, one JSON line at a time.
type mcpProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *strings.Builder // what the server logged

	mu      sync.Mutex
	waiters map[string]chan map[string]any // by canonical id text
	early   map[string]map[string]any      // replies nobody waited for yet
	notes   []map[string]any               // notifications, in arrival order
	nullIDs []map[string]any               // error replies with id null
	noteCh  chan struct{}                  // pinged on each notification
	logCh   chan struct{}                  // pinged on each stderr write
	done    chan struct{}                  // closed when stdout ends
	nextID  int
}

type startOpts struct {
	dir string   // working directory; a fresh temp dir when empty
	env []string // extra KEY=VALUE entries
	exe string   // the binary to run; a buzz-dev-mcp link to the built one when empty
	tmp string   // TMPDIR; a fresh temp dir when empty
	uid int      // run as this uid (and gid) when non-zero
}

// startServer runs the binary under the identity name buzz-dev-mcp.
func startServer(t *testing.T, o startOpts) *mcpProc {
	t.Helper()
	exe := o.exe
	if exe == "" {
		exe = testexe.Link(t, "buzz-dev-mcp")
	}
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	if o.tmp == "" {
		o.tmp = t.TempDir()
	}
	cmd := exec.Command(exe)
	if o.uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.uid)}}
	}
	cmd.Dir = o.dir
	// The server reads BUZZ_* and NOSTR_*; tests choose them explicitly.
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BUZZ_") && !strings.HasPrefix(kv, "NOSTR_") {
			base = append(base, kv)
		}
	}
	// execwait=2: a shell Cmd started and never waited for panics the server.
	// The shell sandbox is off unless a test asks for it: most tests check
	// process handling with pid files outside the working tree; the
	// sandbox's own tests (contain_test.go) set BUZZ_SHELL_SANDBOX.
	cmd.Env = append(base, "TMPDIR="+o.tmp, "BUZZ_DEV_MCP_LOG=debug", "GODEBUG=execwait=2", "BUZZ_SHELL_SANDBOX=off")
	cmd.Env = append(cmd.Env, o.env...)
	return startCmd(t, cmd)
}

// startCmd starts a prepared server command and drives it.
func startCmd(t *testing.T, cmd *exec.Cmd) *mcpProc {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &mcpProc{t: t, cmd: cmd, stdin: stdin, stderr: &strings.Builder{},
		waiters: map[string]chan map[string]any{}, early: map[string]map[string]any{},
		noteCh: make(chan struct{}, 1024), done: make(chan struct{})}
	p.logCh = make(chan struct{}, 1)
	cmd.Stderr = &lockedWriter{w: p.stderr, mu: &p.mu, signal: p.logCh}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The reader ends when the server closes stdout (it exits).
	go p.read(stdout)
	t.Cleanup(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Error("server did not exit after stdin EOF")
			p.cmd.Process.Kill()
		}
		p.cmd.Wait()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("server stderr:\n%s", p.stderr.String())
			p.mu.Unlock()
		}
	})
	return p
}

type lockedWriter struct {
	w      io.Writer
	mu     *sync.Mutex
	signal chan struct{} // pinged after each write
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	n, err := l.w.Write(b)
	l.mu.Unlock()
	select {
	case l.signal <- struct{}{}:
	default:
	}
	return n, err
}

// waitLog waits until the server's stderr contains s.
func (p *mcpProc) waitLog(s string) {
	p.t.Helper()
	deadline := time.After(10 * time.Second)
	for !strings.Contains(p.stderrText(), s) {
		select {
		case <-p.logCh:
		case <-deadline:
			p.t.Fatalf("server log never said %q", s)
		}
	}
}

func (p *mcpProc) read(r io.Reader) {
	defer close(p.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var m map[string]any
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				p.t.Errorf("server wrote a non-JSON line on stdout: %q", line)
				continue
			}
			p.route(m)
		}
		if err != nil {
			return
		}
	}
}

func (p *mcpProc) route(m map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, hasID := m["id"]
	switch {
	case !hasID:
		p.notes = append(p.notes, m)
		select {
		case p.noteCh <- struct{}{}:
		default:
		}
	case id == nil:
		p.nullIDs = append(p.nullIDs, m)
		select {
		case p.noteCh <- struct{}{}:
		default:
		}
	default:
		key := fmt.Sprint(id)
		if ch, ok := p.waiters[key]; ok {
			delete(p.waiters, key)
			ch <- m
			return
		}
		p.early[key] = m
	}
}

// sendLine writes one raw line (a newline is added).
func (p *mcpProc) sendLine(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("write to server: %v", err)
	}
}

// request sends a request and returns a channel that yields its reply.
func (p *mcpProc) request(method string, params any) (id int, reply <-chan map[string]any) {
	p.t.Helper()
	p.mu.Lock()
	p.nextID++
	id = p.nextID
	ch := make(chan map[string]any, 1)
	key := fmt.Sprint(float64(id))
	if m, ok := p.early[key]; ok {
		delete(p.early, key)
		ch <- m
	} else {
		p.waiters[key] = ch
	}
	p.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, err := json.Marshal(msg)
	if err != nil {
		p.t.Fatal(err)
	}
	p.sendLine(string(b))
	return id, ch
}

// await waits for a reply.
func (p *mcpProc) await(ch <-chan map[string]any, what string) map[string]any {
	p.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-p.done:
		p.t.Fatalf("%s: server exited before replying", what)
	case <-time.After(60 * time.Second):
		p.t.Fatalf("%s: no reply within 60s", what)
	}
	return nil
}

// call sends a request and waits for its reply.
func (p *mcpProc) call(method string, params any) map[string]any {
	p.t.Helper()
	_, ch := p.request(method, params)
	return p.await(ch, method)
}

// initialize performs the legacy handshake.
func (p *mcpProc) initialize(version string) map[string]any {
	p.t.Helper()
	r := p.call("initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "devmcp-test", "version": "0"}})
	p.sendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return result(p.t, r)
}

// tool calls a tool and returns the result object (failing on a JSON-RPC error).
func (p *mcpProc) tool(name string, args any) map[string]any {
	p.t.Helper()
	return result(p.t, p.call("tools/call", map[string]any{"name": name, "arguments": args}))
}

// result extracts the result member of a reply, failing on an error reply.
func result(t *testing.T, reply map[string]any) map[string]any {
	t.Helper()
	if e, ok := reply["error"]; ok {
		t.Fatalf("got error reply %v; want a result", e)
	}
	r, ok := reply["result"].(map[string]any)
	if !ok {
		t.Fatalf("reply %v has no result object", reply)
	}
	return r
}

// rpcError extracts the error of a reply, failing on a result.
func rpcError(t *testing.T, reply map[string]any) (code int, msg string) {
	t.Helper()
	e, ok := reply["error"].(map[string]any)
	if !ok {
		t.Fatalf("reply %v is not an error", reply)
	}
	return int(e["code"].(float64)), e["message"].(string)
}

// text returns the concatenated text blocks of a tool result and whether it
// was an error result.
func text(t *testing.T, res map[string]any) (string, bool) {
	t.Helper()
	blocks, ok := res["content"].([]any)
	if !ok {
		t.Fatalf("result %v has no content array", res)
	}
	var b strings.Builder
	for _, bl := range blocks {
		m := bl.(map[string]any)
		if m["type"] == "text" {
			b.WriteString(m["text"].(string))
		}
	}
	isErr, _ := res["isError"].(bool)
	return b.String(), isErr
}

// okText is text for a result that must not be an error.
func okText(t *testing.T, res map[string]any) string {
	t.Helper()
	s, isErr := text(t, res)
	if isErr {
		t.Fatalf("tool error %q; want success", s)
	}
	return s
}

// errText is text for a result that must be an error.
func errText(t *testing.T, res map[string]any) string {
	t.Helper()
	s, isErr := text(t, res)
	if !isErr {
		t.Fatalf("tool success %q; want isError", s)
	}
	return s
}

// waitNote waits until a notification or null-id reply satisfies ok.
func (p *mcpProc) waitNote(what string, ok func(m map[string]any) bool) map[string]any {
	p.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		for _, m := range append(append([]map[string]any{}, p.notes...), p.nullIDs...) {
			if ok(m) {
				p.mu.Unlock()
				return m
			}
		}
		p.mu.Unlock()
		select {
		case <-p.noteCh:
		case <-deadline:
			p.t.Fatalf("no %s within 30s", what)
		case <-p.done:
			p.t.Fatalf("server exited while waiting for %s", what)
		}
	}
}

// stderrText returns what the server logged so far.
func (p *mcpProc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// nobody is the uid tests drop to when they run as root.
const nobody = 65534

// startUnprivileged starts the server as a user that file permissions
// apply to: itself when the tests do not run as root, else nobody, with a
// copy of the binary and a working directory nobody can reach. It returns
// the server, initialized, and its working directory.
func startUnprivileged(t *testing.T) (*mcpProc, string) {
	t.Helper()
	return startUnprivilegedEnv(t, nil)
}

// startUnprivilegedEnv is startUnprivileged with extra KEY=VALUE entries in
// the server's environment.
func startUnprivilegedEnv(t *testing.T, env []string) (*mcpProc, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		dir := t.TempDir()
		p := startServer(t, startOpts{dir: dir, env: env})
		p.initialize("2025-11-25")
		return p, dir
	}
	base := t.TempDir()
	// t.TempDir makes its parent and itself 0700 for root; open them up.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(base, "buzz-dev-mcp")
	data, err := os.ReadFile(testexe.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, tmp := filepath.Join(base, "work"), filepath.Join(base, "tmp")
	for _, d := range []string{dir, tmp} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	p := startServer(t, startOpts{dir: dir, exe: exe, tmp: tmp, uid: nobody, env: env})
	p.initialize("2025-11-25")
	return p, dir
}
