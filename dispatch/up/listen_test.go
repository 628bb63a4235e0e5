package up

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/proc"
	"buzzbox/internal/testexe"
)

// upRun is a running `buzzbox up` and the commands it printed.
type upRun struct {
	t       *testing.T
	dir     string
	printed []string
	buzz    string // "BUZZ_RELAY_URL=… BUZZ_KEYFILE=… buzz": the owner's CLI
	channel string // #general
	agent   string // the agent's hex
	stop    func() int
}

var (
	upSendLine = regexp.MustCompile(`^(.*) messages send --channel ([0-9a-f-]{36}) --mention ([0-9a-f]{64}) `)
	anyUUID    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	anyID      = regexp.MustCompile(`[0-9a-f]{64}`)
)

// startUp runs `buzzbox up` on a free port with environ (HOME and PATH
// are added) until the test ends, and reads what it prints up to its last
// line.
func startUp(t *testing.T, environ []string) *upRun {
	t.Helper()
	return startUpIn(t, environ, t.TempDir(), t.TempDir())
}

// startUpIn is startUp with the given HOME and working directory, so that
// a second run finds the first one's state.
func startUpIn(t *testing.T, environ []string, home, dir string) *upRun {
	t.Helper()
	exe := testexe.Path(t)
	bin := t.TempDir()
	os.Symlink(exe, filepath.Join(bin, "buzz"))
	environ = append(environ, "HOME="+home, "PATH="+bin+":"+os.Getenv("PATH"), "BUZZ_ACP_NO_PRESENCE=true")
	u := &upRun{t: t, dir: dir}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"--listen", "127.0.0.1:0"}, proc.Env{Environ: environ, Dir: u.dir, Exe: exe, Stdout: pw, Stderr: t.Output()})
		pw.Close()
	}()
	var once sync.Once
	res := -1
	u.stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case res = <-code:
			case <-time.After(60 * time.Second):
				t.Error("up did not stop on cancel")
			}
		})
		return res
	}
	t.Cleanup(func() { u.stop() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("up ended after printing %q", u.printed)
			}
			if l = strings.TrimSpace(l); l != "" {
				u.printed = append(u.printed, l)
			}
			if m := upSendLine.FindStringSubmatch(l); m != nil {
				u.buzz, u.channel, u.agent = m[1], m[2], m[3]
			}
			if strings.HasPrefix(l, "Press Ctrl-C") {
				go func() { // drains what up prints later; ends when up does
					for range lines {
					}
				}()
				return u
			}
		case <-deadline:
			t.Fatalf("up printed %q and stopped printing", u.printed)
		}
	}
}

// cli runs the owner's buzz with args (a shell command line's tail).
func (u *upRun) cli(args string) string { return runPrinted(u.t, u.dir, u.buzz+" "+args) }

// read is the channel's messages as the CLI prints them.
func (u *upRun) read(channel string) string { return u.cli("messages get --channel " + channel) }

// TestUpWithoutProvider: on a machine with no model provider configured
// `buzzbox up` still starts the workspace (relay, web client, the owner's
// sign-in link), says the agent is not configured, and a mention gets,
// within seconds, a notice naming the variables to set.
func TestUpWithoutProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	for _, tc := range []struct {
		name string
		env  []string
		want []string // in what up prints and in the notice
	}{
		{"none", nil, []string{"BUZZ_AGENT_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_COMPAT_MODEL"}},
		{"no key or model", []string{"BUZZ_AGENT_PROVIDER=anthropic"}, []string{"ANTHROPIC_API_KEY", "ANTHROPIC_MODEL"}},
		{"unknown provider", []string{"BUZZ_AGENT_PROVIDER=bogus"}, []string{"BUZZ_AGENT_PROVIDER=bogus is not supported", "anthropic, openai"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := startUp(t, tc.env)
			all := strings.Join(u.printed, "\n")
			for _, want := range append([]string{"/#login=", "not configured"}, tc.want...) {
				if !strings.Contains(all, want) {
					t.Errorf("up printed no %q:\n%s", want, all)
				}
			}
			u.cli("messages send --channel " + u.channel + " --mention " + u.agent + " --content 'are you there?'")
			start := time.Now()
			waitFor(t, "the not-configured notice", 20*time.Second, func() bool {
				return strings.Contains(u.read(u.channel), "not configured")
			})
			t.Logf("notice %v after the mention", time.Since(start).Round(time.Millisecond))
			got := u.read(u.channel)
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("the notice does not name %s:\n%s", want, got)
				}
			}
		})
	}
}

// TestUpConfiguredLater: a workspace started without a provider, run
// again with one, has the agent answer in it.
func TestUpConfiguredLater(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	home, dir := t.TempDir(), t.TempDir()
	u := startUpIn(t, nil, home, dir)
	if c := u.stop(); c != 0 {
		t.Fatalf("up without a provider exited %d on cancel; want 0", c)
	}
	m := newUpModel(t)
	u = startUpIn(t, m.env(), home, dir)
	if strings.Contains(strings.Join(u.printed, "\n"), "not configured") {
		t.Errorf("up with a provider still says the agent is not configured")
	}
	u.cli("messages send --channel " + u.channel + " --mention " + u.agent + " --content 'now-configured'")
	waitFor(t, "the configured agent's answer", 30*time.Second, func() bool { return strings.Contains(u.read(u.channel), "reply to now-configured") })
}

// upModel answers every request with "reply to <the newest message's
// text>" and records the user text of each request.
type upModel struct {
	*llmtest.Server
	mu    sync.Mutex
	texts []string
}

var lastContent = regexp.MustCompile(`Content: ([a-z0-9-]+)`)

func newUpModel(t *testing.T) *upModel {
	m := &upModel{Server: llmtest.New(t)}
	m.SetHandler(func(req map[string]any) llmtest.Reply {
		b, _ := json.Marshal(req)
		text := strings.ReplaceAll(string(b), `\n`, "\n")
		m.mu.Lock()
		m.texts = append(m.texts, text)
		m.mu.Unlock()
		all := lastContent.FindAllStringSubmatch(text, -1)
		if len(all) == 0 {
			return llmtest.Reply{Text: "no content seen"}
		}
		return llmtest.Reply{Text: "reply to " + all[len(all)-1][1]}
	})
	return m
}

// asked counts the requests that carry s.
func (m *upModel) asked(s string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.texts {
		if strings.Contains(t, s) {
			n++
		}
	}
	return n
}

func (m *upModel) env() []string {
	return []string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k", "OPENAI_COMPAT_MODEL=m",
		"OPENAI_COMPAT_BASE_URL=" + m.URL}
}

// TestUpListensWhereItIsMember: under `buzzbox up` the agent answers in a
// channel made at run time as soon as it is added (buzz channels
// add-member), stops when removed; after it has replied in a thread, a
// reply there without a mention is answered; a private channel of the
// owner and the agent is a DM, answered without a mention.
func TestUpListensWhereItIsMember(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	m := newUpModel(t)
	u := startUp(t, m.env())
	answered := func(what, channel, word string) {
		t.Helper()
		waitFor(t, what, 30*time.Second, func() bool { return strings.Contains(u.read(channel), "reply to "+word) })
	}

	// A channel made at run time, the agent added.
	side := anyUUID.FindString(u.cli("channels create --name side --type stream --visibility open"))
	if side == "" {
		t.Fatal("channels create printed no channel id")
	}
	u.cli("channels add-member --channel " + side + " --pubkey " + u.agent)
	start := time.Now()
	sideRoot := anyID.FindString(u.cli("messages send --channel " + side + " --mention " + u.agent + " --content 'side-one'"))
	answered("the answer in the new channel", side, "side-one")
	t.Logf("answered in the new channel %v after the mention", time.Since(start).Round(time.Millisecond))

	// Removed: no more answers there, not even in its thread (the CLI
	// refuses to mention a non-member).
	u.cli("channels remove-member --channel " + side + " --pubkey " + u.agent)
	time.Sleep(2 * time.Second) // the removal's 44101 reaches the harness
	u.cli("messages send --channel " + side + " --reply-to " + sideRoot + " --content 'side-two'")
	time.Sleep(5 * time.Second) // what an answer took above, several times over
	if n := m.asked("side-two"); n != 0 {
		t.Errorf("the agent, removed from the channel, was asked %d times about a reply in its thread there", n)
	}

	// A thread the agent replied in: a reply there needs no mention.
	root := anyID.FindString(u.cli("messages send --channel " + u.channel + " --mention " + u.agent + " --content 'thread-one'"))
	if root == "" {
		t.Fatal("messages send printed no event id")
	}
	answered("the answer to the thread's root", u.channel, "thread-one")
	u.cli("messages send --channel " + u.channel + " --reply-to " + root + " --content 'thread-two'")
	waitFor(t, "the model asked about the unmentioned reply", 30*time.Second, func() bool { return m.asked("thread-two") > 0 })
	// A top-level message without a mention still does not wake it.
	u.cli("messages send --channel " + u.channel + " --content 'general-plain'")

	// A DM: a private channel of the owner and the agent.
	dm := anyUUID.FindString(u.cli("channels create --name owner-agent --type stream --visibility private"))
	u.cli("channels add-member --channel " + dm + " --pubkey " + u.agent)
	time.Sleep(time.Second) // the join's 44100 reaches the harness
	u.cli("messages send --channel " + dm + " --content 'dm-one'")
	answered("the answer to the DM", dm, "dm-one")
	if n := m.asked("general-plain"); n != 0 {
		t.Errorf("a top-level message without a mention reached the model %d times", n)
	}
}
