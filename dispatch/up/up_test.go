package up

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/statedir"
	"buzzbox/internal/testexe"
	"buzzbox/relay"
)

// upProviderKey is the provider key TestUp's agent runs with; its shell
// must never see it.
const upProviderKey = "sk-up-test-provider-key-4f1e"

// upAttack is the command a prompt injection has the agent run: read the
// owner key where `buzzbox up` keeps it (and kept it before) and the
// provider key from every process's environment, the agent's included.
const upAttack = `cat .buzz/owner.key "$HOME"/.local/state/buzzbox/*/owner.key; ` +
	`for p in /proc/[0-9]*; do cat $p/environ; done | tr '\0' '\n' | grep -a OPENAI_COMPAT_API_KEY; ` +
	`p=$$; while [ "$p" -gt 1 ]; do tr '\0' '\n' < /proc/$p/environ | grep -a OPENAI_COMPAT_API_KEY; p=$(awk '/^PPid/{print $2}' /proc/$p/status); done; echo attack-ran`

// TestUp runs `buzzbox up`, then the exact commands it prints. The agent
// also runs an attacker's command (TestAttackUpShellReadsOwnerKey's case):
// its output must hold neither the owner key nor the provider key.
func TestUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	llm := llmtest.New(t)
	var anchor = regexp.MustCompile(`buzz messages send --channel ([0-9a-f-]{36}) --reply-to ([0-9a-f]{64})`)
	toolOut := make(chan string, 1)
	llm.SetHandler(func(req map[string]any) llmtest.Reply {
		msgs, _ := req["messages"].([]any)
		if last, _ := msgs[len(msgs)-1].(map[string]any); last["role"] == "tool" {
			b, _ := json.Marshal(msgs)
			select {
			case toolOut <- string(b):
			default:
			}
			return llmtest.Reply{Text: "done"}
		}
		b, _ := json.Marshal(msgs)
		m := anchor.FindStringSubmatch(strings.ReplaceAll(string(b), `\u0060`, "`"))
		if m == nil {
			return llmtest.Reply{Text: "?"}
		}
		args, _ := json.Marshal(map[string]string{"command": "buzz messages send --channel " + m[1] + " --reply-to " + m[2] + " --content 'hello from the agent'"})
		attack, _ := json.Marshal(map[string]string{"command": upAttack})
		return llmtest.Reply{Calls: []llmtest.Call{{ID: "c1", Name: "buzz-dev-mcp__shell", Args: string(args)}, {ID: "c2", Name: "buzz-dev-mcp__shell", Args: string(attack)}}}
	})
	u := newUpEnv(t, llm, upProviderKey)
	exe, dir, environ := u.exe, u.dir, u.environ
	state, err := statedir.ForWorkspace(proc.Env{Environ: environ}.Getenv, dir)
	if err != nil {
		t.Fatal(err)
	}
	runUp := func() (lines chan string, stop func() int) {
		pr, pw := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		code := make(chan int, 1)
		go func() {
			code <- Main(ctx, []string{"--listen", "127.0.0.1:0"}, proc.Env{Environ: environ, Dir: dir, Exe: exe, Stdout: pw, Stderr: t.Output()})
			pw.Close()
		}()
		lines = make(chan string, 100)
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		return lines, func() int {
			cancel()
			select {
			case c := <-code:
				return c
			case <-time.After(60 * time.Second):
				t.Fatal("up did not stop on cancel")
				return -1
			}
		}
	}
	lines, stop := runUp()
	var npub string
	var printed []string
	send, get := awaitCommands(t, lines, func(l string) {
		if l != "" {
			printed = append(printed, l)
		}
		if strings.HasPrefix(l, "Relay ws://") {
			npub = l[strings.LastIndex(l, " ")+1:]
		}
	})
	// The web link comes first, then the CLI; replies are read compactly.
	if len(printed) < 2 || !strings.HasPrefix(printed[1], "http://127.0.0.1:") || !strings.HasSuffix(printed[1], "/") {
		t.Errorf("up printed %q first; want the web link on the second line", printed[:min(len(printed), 2)])
	}
	if len(printed) >= 2 {
		resp, err := http.Get(printed[1])
		if err != nil {
			t.Errorf("GET the printed web link %s: %v", printed[1], err)
		} else {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				t.Errorf("GET %s = %d %s; want 200 text/html", printed[1], resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		}
	}
	if !strings.Contains(get, " --format compact messages get ") {
		t.Errorf("read command %q does not use --format compact", get)
	}
	for _, f := range []string{upOwnerKey, upAgentKey} {
		fi, err := os.Stat(filepath.Join(state, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v mode %v; want 0600", f, err, fi)
		}
	}
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir %s: %v %v; want mode 0700", state, err, fi)
	}
	if _, err := os.Stat(filepath.Join(dir, ".buzz")); err == nil {
		t.Errorf("up made .buzz in the working tree; want its state in %s", state)
	}
	sh := func(line string) string { return runPrinted(t, dir, line) }
	sh(send)
	waitFor(t, "the agent's reply via the printed read command", 60*time.Second, func() bool {
		return strings.Contains(sh(get), "hello from the agent")
	})
	select {
	case out := <-toolOut:
		owner, err := os.ReadFile(filepath.Join(state, upOwnerKey))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "attack-ran") {
			t.Errorf("the attack command did not run: %s", out)
		}
		if k := strings.TrimSpace(string(owner)); strings.Contains(out, k) {
			t.Errorf("the agent's shell read the owner key")
		}
		if strings.Contains(out, upProviderKey) {
			t.Errorf("the agent's shell read the provider key")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the tool results never reached the model")
	}
	if c := stop(); c != 0 {
		t.Errorf("up exited %d after cancel; want 0", c)
	}
	// A second run reuses the keys.
	lines, stop = runUp()
	for l := range lines {
		if strings.HasPrefix(l, "Relay ws://") {
			if !strings.HasSuffix(l, npub) {
				t.Errorf("second run agent %q; want %s", l, npub)
			}
			break
		}
	}
	stop()
}

// TestUpHelp: `buzzbox up --help` describes the provider variables, the
// state kept and the flags with their --spelling, on stdout, exit 0.
func TestUpHelp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	cmd := exec.Command(testexe.Path(t), "up", "--help")
	cmd.Dir = t.TempDir()
	stdout, stderr, code := testexe.Run(t, cmd)
	if code != 0 || stderr != "" {
		t.Fatalf("buzzbox up --help: exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	for _, want := range []string{"usage: buzzbox up", "BUZZ_AGENT_PROVIDER", "=openai", "OPENAI_COMPAT_API_KEY", "ANTHROPIC_API_KEY",
		"owner.key", "agent.key", "--listen ADDRESS", "--dir DIR", "--public-url URL", "http://ADDRESS/", "Example:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("buzzbox up --help lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "\n  -listen") {
		t.Errorf("buzzbox up --help uses Go's single-dash flag dump:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(cmd.Dir, ".buzz")); err == nil {
		t.Errorf("buzzbox up --help created .buzz")
	}
}

// TestUpTellsRefusedKey is the new user's first run with a wrong key: the
// message sent with the printed command is answered, within seconds, by a
// notice the printed read command shows, naming the variable to fix.
func TestUpTellsRefusedKey(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	const key = "sk-wrong-0123456789abcdef"
	llm := llmtest.New(t)
	llm.SetFallback(llmtest.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + key + `"}}`})
	u := newUpEnv(t, llm, key)
	dir := u.dir
	send, get := awaitCommands(t, u.start(t, "--listen", "127.0.0.1:0"), nil)
	sh := func(line string) string { return runPrinted(t, dir, line) }
	sh(send)
	var out string
	waitFor(t, "the refused-key notice via the printed read command", 60*time.Second, func() bool {
		out = sh(get)
		return strings.Contains(out, "OPENAI_COMPAT_API_KEY")
	})
	if !strings.Contains(out, "refused the API key (401)") || strings.Contains(out, key) {
		t.Errorf("read command shows %s; want the 401 notice without the key", out)
	}
}

// TestUpPublicURLBehindRemappedPort runs `buzzbox up` behind a port it
// does not listen on, as in a container run with -p 8080:3000 (here a TCP
// forwarder): the printed web link and commands name the public URL and
// work through it (the relay takes NIP-98 tokens naming it), and the
// agent, which dials the listen address, still answers.
func TestUpPublicURLBehindRemappedPort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	llm := llmtest.New(t)
	llm.SetFallback(llmtest.Reply{Text: "hello through the remapped port"})
	fwd, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fwd.Close() })
	var target atomic.Value // the relay's listen address, once up prints it
	go func() {             // ends when fwd is closed
		for {
			c, err := fwd.Accept()
			if err != nil {
				return
			}
			addr, _ := target.Load().(string)
			go func() { // ends when either side closes
				defer c.Close()
				if addr == "" {
					return
				}
				r, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer r.Close()
				go func() { io.Copy(r, c); r.Close() }() // ends with c
				io.Copy(c, r)
			}()
		}
	}()
	port := fwd.Addr().(*net.TCPAddr).Port
	public := "http://localhost:" + strconv.Itoa(port)

	u := newUpEnv(t, llm, "k")
	dir := u.dir
	var web string
	send, get := awaitCommands(t, u.start(t, "--listen", "127.0.0.1:0", "--public-url", "ws://localhost:"+strconv.Itoa(port)), func(l string) {
		switch {
		case strings.HasPrefix(l, "http://") && web == "":
			web = l
		case strings.HasPrefix(l, "Listening on "):
			addr, _, _ := strings.Cut(strings.TrimPrefix(l, "Listening on "), ";")
			target.Store(addr)
		}
	})
	if target.Load() == nil {
		t.Fatal("up did not say where it listens")
	}
	if web != public+"/" {
		t.Errorf("web link %q; want %s/", web, public)
	}
	if resp, err := http.Get(web); err != nil {
		t.Errorf("GET %s through the remapped port: %v", web, err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d; want 200", web, resp.StatusCode)
		}
	}
	for _, c := range []string{send, get} {
		if !strings.Contains(c, "BUZZ_RELAY_URL="+public+" ") {
			t.Errorf("printed command %q does not name %s", c, public)
		}
	}
	sh := func(line string) string { return runPrinted(t, dir, line) }
	sh(send)
	waitFor(t, "the agent's reply through the remapped port", 60*time.Second, func() bool {
		return strings.Contains(sh(get), "hello through the remapped port")
	})
}

// TestUpSetupRefusedEndsNotHangs: when the relay refuses the set-up's
// login (here a relay whose public URL is not the address dialled, so the
// AUTH event names the wrong relay), `buzzbox up` must
// report it and end, not wait forever for a connection that already ended
// (it then ignored Ctrl-C too).
func TestUpSetupRefusedEndsNotHangs(t *testing.T) {
	owner, _ := nostrkey.NewSecret()
	agent, _ := nostrkey.NewSecret()
	r, err := relay.Start(relay.Config{DataDir: t.TempDir(), Owner: owner.Public().Hex(), PublicURL: "ws://relay.example.invalid", Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make(chan error, 1)
	go func() { // ends when ensureGeneral returns
		_, err := ensureGeneral(t.Context(), r.URL(), t.TempDir(), owner, agent, slog.New(slog.NewTextHandler(t.Output(), nil)))
		got <- err
	}()
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "connect to the embedded relay") {
			t.Errorf("ensureGeneral on a relay refusing the key = %v; want the refusal reported", err)
		}
	case <-time.After(2 * connectTimeout):
		t.Fatal("ensureGeneral hung after the relay refused its login")
	}
}

// upEnv is what a test runs `buzzbox up` with: the executable, a fresh
// working directory, and an environment naming llm as an
// OpenAI-compatible provider with key, a fresh HOME, presence off, and
// first on PATH a directory with a `buzz` link to the executable (the
// printed commands run `buzz`).
type upEnv struct {
	exe, dir string
	environ  []string
}

func newUpEnv(t *testing.T, llm *llmtest.Server, key string) upEnv {
	t.Helper()
	exe := testexe.Path(t)
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "buzz")); err != nil {
		t.Fatal(err)
	}
	return upEnv{exe: exe, dir: t.TempDir(), environ: []string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat",
		"OPENAI_COMPAT_API_KEY=" + key, "OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL=" + llm.URL,
		"HOME=" + t.TempDir(), "PATH=" + bin + ":" + os.Getenv("PATH"), "BUZZ_ACP_NO_PRESENCE=true"}}
}

// start runs `buzzbox up args...` as a process in u.dir and returns its
// stdout's lines; at test end it is sent SIGINT and, still running 30 s
// later, killed (an error).
func (u upEnv) start(t *testing.T, args ...string) <-chan string {
	t.Helper()
	cmd := exec.Command(u.exe, append([]string{"up"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stderr = u.dir, u.environ, t.Output()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		waited := make(chan struct{})
		go func() { cmd.Wait(); close(waited) }() // ends when up exits
		select {
		case <-waited:
		case <-time.After(30 * time.Second):
			t.Errorf("up did not stop on SIGINT; killed")
			cmd.Process.Kill()
			<-waited
		}
	})
	lines := make(chan string, 100)
	go func() { // ends when up closes stdout
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines
}

// awaitCommands reads up's printed lines until its send and read commands
// have come, handing each line, trimmed, to each (nil: none) first; it
// fails t when up ends before or prints none within a minute.
func awaitCommands(t *testing.T, lines <-chan string, each func(string)) (send, get string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for send == "" || get == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("up ended before printing its commands")
			}
			l = strings.TrimSpace(l)
			if each != nil {
				each(l)
			}
			switch {
			case strings.Contains(l, " messages send "):
				send = l
			case strings.Contains(l, " messages get "):
				get = l
			}
		case <-deadline:
			t.Fatal("up printed no commands")
		}
	}
	return send, get
}

// runPrinted runs a command line up printed, as a person would paste it
// into a shell in dir with nothing but PATH set, and returns its output.
func runPrinted(t *testing.T, dir, line string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}
