package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
)

// Tests that a person who writes to the agent always hears back: failures
// reach the thread with their cause within seconds, and an answer given in
// session text instead of through the CLI still reaches the thread. Each
// runs the built binary as buzz-acp, which starts the built binary as
// buzz-agent against a fake model provider on loopback.

// fakeKey is the provider key the tests give the agent; no notice may
// carry it.
const fakeKey = "sk-test-5f1e8c0a9b7d4e2f"

// acpProc is a buzz-acp subprocess whose stderr lines the test can await.
type acpProc struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
	grew  chan struct{}
	stop  func() // SIGTERM, then wait for the exit; idempotent
}

// startACP runs buzz-acp for w's agent with the provider variables in
// provider and the extra flags args; it is stopped (SIGTERM) at test end.
func startACP(t *testing.T, w *world, provider []string, args ...string) *acpProc {
	t.Helper()
	exe := testexe.Path(t)
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "buzz")); err != nil {
		t.Fatal(err)
	}
	skHex, _ := w.agent.AppendHex(nil)
	cmd := exec.Command(testexe.Link(t, "buzz-acp"), append([]string{"--relay-url", w.relay.URL(),
		"--agent-owner", w.owner.Public().Hex(), "--no-presence"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"BUZZ_PRIVATE_KEY=" + string(skHex), "HOME=" + t.TempDir(),
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "OPENAI_COMPAT_API=chat"}, provider...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &acpProc{t: t, grew: make(chan struct{}, 1)}
	read := make(chan struct{})
	go func() { // ends when buzz-acp closes stderr
		defer close(read)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			t.Log("buzz-acp: " + sc.Text())
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			select {
			case p.grew <- struct{}{}:
			default:
			}
		}
	}()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Error("buzz-acp did not stop on SIGTERM")
			}
			<-read
		})
	}
	t.Cleanup(p.stop)
	p.await("buzz-acp listening", 60*time.Second, "msg=listening")
	return p
}

// await waits until a stderr line contains every one of want.
func (p *acpProc) await(what string, d time.Duration, want ...string) {
	p.t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			ok := true
			for _, s := range want {
				ok = ok && strings.Contains(l, s)
			}
			if ok {
				p.mu.Unlock()
				return
			}
		}
		p.mu.Unlock()
		select {
		case <-p.grew:
		case <-deadline.C:
			p.t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// agentReplies returns the agent's kind 9 events that reply to id.
func (w *world) agentReplies(id string) []*nostr.Event {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindStream}, Authors: []string{w.agent.Public().Hex()},
		Tags: nostr.TagMap{"h": {w.channel}}})
	var out []*nostr.Event
	for _, e := range evs {
		if e.Tags.FindWithValue("e", id) != nil {
			out = append(out, e)
		}
	}
	return out
}

// awaitReply waits for the agent's first reply to id.
func (w *world) awaitReply(t *testing.T, what string, id string) *nostr.Event {
	t.Helper()
	return w.awaitAgentReply(t, what, 60*time.Second, id, nil)
}

func openaiEnv(baseURL string) []string {
	return []string{"BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API_KEY=" + fakeKey, "OPENAI_COMPAT_MODEL=m",
		"OPENAI_COMPAT_BASE_URL=" + baseURL}
}

func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary")
	}
}

// checkNotice fails unless n says every one of want and carries no secret.
func checkNotice(t *testing.T, n *nostr.Event, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(n.Content, s) {
			t.Errorf("notice %q lacks %q", n.Content, s)
		}
	}
	if strings.Contains(n.Content, fakeKey) {
		t.Errorf("notice carries the provider key: %q", n.Content)
	}
}

// TestSilentPlainTextAnswer: a model that answers in plain text, never
// calling the CLI, used to be heard by nobody. The reply guard posts its
// final text in the thread, signed by the agent.
func TestSilentPlainTextAnswer(t *testing.T) {
	skipShort(t)
	w := newWorld(t)
	llm := llmtest.New(t)
	llm.SetFallback(llmtest.Reply{Text: "The answer is 42."})
	startACP(t, w, openaiEnv(llm.URL))
	m := w.mention("what is the answer?")
	r := w.awaitReply(t, "the final text in the thread", m.ID)
	if r.Content != "The answer is 42." {
		t.Errorf("reply = %q; want the model's text", r.Content)
	}
	if ok, _ := r.CheckSignature(); !ok || r.PubKey != w.agent.Public().Hex() {
		t.Errorf("reply not signed by the agent: pubkey %s", r.PubKey)
	}
}

// TestSilentNoDuplicateReply: a model that answers through `buzz messages
// send` is not answered for a second time by the reply guard.
func TestSilentNoDuplicateReply(t *testing.T) {
	skipShort(t)
	w := newWorld(t)
	llm := llmtest.New(t)
	llm.SetHandler(shellReplyModel(func() string { return "pong" }))
	p := startACP(t, w, openaiEnv(llm.URL))
	m := w.mention("ping")
	p.await("the reply guard's check", 90*time.Second, "reply guard: the agent answered")
	got := w.agentReplies(m.ID)
	if len(got) != 1 || got[0].Content != "pong" {
		var texts []string
		for _, e := range got {
			texts = append(texts, e.Content)
		}
		t.Errorf("agent replies = %q; want just [pong]", texts)
	}
}

// TestSilentOtherAgentErrorKeepsKeyOut: an agent other than buzz-agent
// sends no cause data, so the notice quotes its message; a provider key
// that message echoes is cut out, and the notice comes after the first
// failure rather than after the retry ladder.
func TestSilentOtherAgentErrorKeepsKeyOut(t *testing.T) {
	w := newWorld(t)
	w.startHarnessTiming(w.harnessEnv("echo", envFakeError+"=provider said: bad key "+fakeKey, "OPENAI_COMPAT_API_KEY="+fakeKey),
		timing{retryBase: time.Hour, respawn: time.Millisecond})
	m := w.mention("hello")
	n := w.awaitReply(t, "the first-failure notice", m.ID)
	checkNotice(t, n, "the agent failed: ", "provider said: bad key [redacted]", "keep trying")
}

// FuzzClassify: whatever error an agent sends (code, message, data), the
// notice's cause is non-empty, bounded, valid UTF-8, and nothing panics.
func FuzzClassify(f *testing.F) {
	f.Add(-32001, "llm auth: (m) 401: nope", `{"kind":"auth","status":401,"keyEnv":"OPENAI_COMPAT_API_KEY"}`)
	f.Add(-32002, "llm model not found", `{"kind":"model_not_found","model":"m","modelEnv":"X","baseUrl":"http://h/v1"}`)
	f.Add(-32000, "connection refused", `{"kind":"unreachable","retryable":true}`)
	f.Add(-32000, "x", `{"kind":7}`)
	f.Add(-32000, "x", `[1,2]`)
	f.Add(-32000, "x", `null`)
	f.Fuzz(func(t *testing.T, code int, msg, data string) {
		var d any
		if json.Unmarshal([]byte(data), &d) != nil {
			d = data
		}
		fl := classify(&jsonrpc.Error{Code: code, Message: msg, Data: d})
		if fl.cause == "" || !utf8.ValidString(fl.cause) && utf8.ValidString(msg) && utf8.ValidString(data) {
			t.Fatalf("classify(%d, %q, %s) = %q", code, msg, data, fl.cause)
		}
		if n := utf8.RuneCountInString(fl.cause); n > maxNoticeCause+4*maxNoticeField+200 {
			t.Fatalf("cause of %d runes", n)
		}
	})
}

// TestSilentAgentCrashIsTold: an agent that dies during the turn used to
// be retried in silence; the thread now hears it after the first crash.
func TestSilentAgentCrashIsTold(t *testing.T) {
	w := newWorld(t)
	w.startHarnessTiming(w.harnessEnv("dieall"), timing{retryBase: time.Hour, respawn: time.Millisecond})
	m := w.mention("boom")
	n := w.awaitReply(t, "the first-failure notice", m.ID)
	checkNotice(t, n, "the agent process stopped in the middle of the turn", "keep trying")
}

// TestSilentModelNeverAnswers: a provider that accepts the request and
// never answers kept the thread silent through the agent's inactivity
// timeout and retries (12 minutes with buzz-agent's defaults); the thread
// now hears that the agent is still waiting once the first-word watch
// (60 s, shortened here) passes with nothing from the model.
func TestSilentModelNeverAnswers(t *testing.T) {
	skipShort(t)
	w := newWorld(t)
	llm := llmtest.New(t)
	llm.SetFallback(llmtest.Reply{Hang: true})
	env := w.agentEnv(t, append(openaiEnv(llm.URL), "OPENAI_COMPAT_API=chat", "HOME="+t.TempDir())...)
	w.runHarness(t, env, timing{firstWord: time.Second}, "--mcp-command", "")
	m := w.mention("hello")
	n := w.awaitReply(t, "the still-waiting notice", m.ID)
	checkNotice(t, n, "Still working on this", "no answer from its model for 1s")
}

// TestWordFailure pins the words and the retry decision for each kind of
// cause buzz-agent reports.
func TestWordFailure(t *testing.T) {
	base := acp.Failure{Provider: "openai", Model: "m", BaseURL: "http://llm.local/v1", KeyEnv: "OPENAI_COMPAT_API_KEY",
		ModelEnv: "OPENAI_COMPAT_MODEL", BaseURLEnv: "OPENAI_COMPAT_BASE_URL"}
	for _, tc := range []struct {
		kind      string
		status    int
		want      string
		retryable bool
	}{
		{acp.FailureAuth, 401, "the model provider refused the API key (401): check OPENAI_COMPAT_API_KEY", false},
		{acp.FailureModelNotFound, 404, `the model provider at http://llm.local/v1 does not know the model "m" (404): check OPENAI_COMPAT_MODEL (or BUZZ_AGENT_MODEL)`, false},
		{acp.FailureUnreachable, 0, "the model provider at http://llm.local/v1 could not be reached (no connection): check OPENAI_COMPAT_BASE_URL and that the server is running", true},
		{acp.FailureRateLimited, 429, "the model provider is rate-limiting the agent (429)", true},
		{acp.FailureProvider, 503, "the model provider at http://llm.local/v1 failed to answer (503)", true},
		{acp.FailureContextWindow, 400, `the conversation no longer fits the model "m"'s context window: start a new thread`, false},
		{acp.FailureOther, 402, "the model provider asks for payment (402): check the account's credits", false},
		{acp.FailureOther, 0, "the model provider at http://llm.local/v1 sent an answer the agent could not read: check that OPENAI_COMPAT_BASE_URL points at this provider's API", true},
		{acp.FailureOther, 422, "the model provider at http://llm.local/v1 rejected the request (422): check the agent's provider settings (OPENAI_COMPAT_MODEL, OPENAI_COMPAT_BASE_URL)", false},
	} {
		f := base
		f.Kind, f.Status = tc.kind, tc.status
		got := wordFailure(f)
		if got.cause != tc.want || got.retryable != tc.retryable {
			t.Errorf("wordFailure(%s, %d) = %q retryable %v;\n want %q retryable %v", tc.kind, tc.status, got.cause, got.retryable, tc.want, tc.retryable)
		}
	}
}

// TestSilentFailureIsTold: each way the agent can fail to answer used to
// leave the thread silent, or told it late and without a cause. Now one
// notice, after the first failure, names the cause and what to change, and
// a provider key that the provider's body echoes stays out of it.
func TestSilentFailureIsTold(t *testing.T) {
	skipShort(t)
	for _, c := range []struct {
		name string
		// model is the fake provider's answer to every request; without
		// one, baseURL names the provider (nil: none is configured).
		model    *llmtest.Reply
		baseURL  func(t *testing.T) string
		flags    []string
		mentions int // each answered with the notice; 0 means 1
		want     []string
		requests int // provider requests before the notice; 0 unchecked
	}{
		// Retried for ~25 minutes, then reported without a cause. One turn:
		// the request and the one bearer refresh the client makes.
		{name: "ProviderRefusesKey",
			model:    &llmtest.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + fakeKey + `","code":"invalid_api_key"}}`},
			want:     []string{"refused the API key (401)", "check OPENAI_COMPAT_API_KEY"},
			requests: 2},
		{name: "UnknownModel",
			model: &llmtest.Reply{Status: 404, Body: `{"error":{"message":"The model 'm' does not exist","code":"model_not_found"}}`},
			want:  []string{`does not know the model "m" (404)`, "check OPENAI_COMPAT_MODEL"}},
		// Retryable: the thread hears the cause and that the agent keeps trying.
		{name: "ProviderUnreachable", baseURL: deadURL,
			want: []string{"could not be reached", "check OPENAI_COMPAT_BASE_URL", "keep trying"}},
		// buzz-acp used to exit before anyone wrote; it keeps listening.
		{name: "AgentCannotStart", baseURL: func(*testing.T) string { return "http://127.0.0.1:1/v1" },
			flags: []string{"--agent-command", "/nonexistent/agent-bin"},
			want:  []string{"could not be started", "/nonexistent/agent-bin", "check --agent-command"}},
		// buzz-agent with no provider configured exits before initialize;
		// its words are quoted.
		{name: "AgentExitsAtStart",
			want: []string{"could not be started", "BUZZ_AGENT_PROVIDER is required", "check --agent-command"}},
		// With --lazy-pool each message starts the agent; each is answered
		// at once instead of waiting out the circuit breaker (300 s).
		{name: "LazyAgentCannotStart", baseURL: func(*testing.T) string { return "http://127.0.0.1:1/v1" },
			flags:    []string{"--lazy-pool", "--agent-command", "/nonexistent/agent-bin"},
			mentions: 2,
			want:     []string{"could not be started", "/nonexistent/agent-bin", "check --agent-command"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			var llm *llmtest.Server
			var provider []string
			switch {
			case c.model != nil:
				llm = llmtest.New(t)
				llm.SetFallback(*c.model)
				provider = openaiEnv(llm.URL)
			case c.baseURL != nil:
				provider = openaiEnv(c.baseURL(t))
			}
			startACP(t, w, provider, c.flags...)
			for i := range max(c.mentions, 1) {
				m := w.mention("hello " + strconv.Itoa(i))
				n := w.awaitReply(t, "the failure notice", m.ID)
				checkNotice(t, n, c.want...)
			}
			if c.requests > 0 && llm.Count() != c.requests {
				t.Errorf("provider saw %d requests before the notice; want %d (no retry ladder)", llm.Count(), c.requests)
			}
		})
	}
}

// deadURL returns a base URL nothing listens on.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String() + "/v1"
}

// TestSilentTextNotPostedStaysQuiet: the reply guard posts an agent's
// final text only for a turn started by a mention or a DM and only with
// --post-final-text (upstream's behaviour is the opt-out); otherwise text
// the agent did not send stays unsent.
func TestSilentTextNotPostedStaysQuiet(t *testing.T) {
	skipShort(t)
	for _, c := range []struct {
		name    string
		flags   []string
		mention bool
	}{
		{"PlainTextOptOut", []string{"--post-final-text=false"}, true},
		// A channel message the agent merely reads.
		{"UnmentionedTurn", []string{"--subscribe", "all", "--no-mention-filter"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			llm := llmtest.New(t)
			llm.SetFallback(llmtest.Reply{Text: "The answer is 42."})
			p := startACP(t, w, openaiEnv(llm.URL), c.flags...)
			var m *nostr.Event
			if c.mention {
				m = w.mention("what is the answer?")
			} else {
				m = w.publish(&nostr.Event{Kind: 9, Content: "a note for the channel", Tags: nostr.Tags{{"h", w.channel}}})
			}
			p.await("the turn to finish", 60*time.Second, "turn finished")
			p.stop() // shutdown waits for anything the turn still had to post
			if got := w.agentReplies(m.ID); len(got) != 0 {
				t.Errorf("agent posted %q; want nothing", got[0].Content)
			}
		})
	}
}

// TestReplyGuardEachTurnItsOwn: mentions sent one after another, each as
// soon as the last was answered, get one answer each. The reply guard asks
// for the agent's messages since its turn began, in seconds: the answer it
// posted for the turn before, in the same second, is not this turn's.
func TestReplyGuardEachTurnItsOwn(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("echo"))
	for i := range 6 {
		m := w.mention("question " + strconv.Itoa(i))
		w.awaitAgentReply(t, "the answer to question "+strconv.Itoa(i), 20*time.Second, m.ID, nil)
	}
}
