package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
)

// restartRig runs the real buzz-acp (with the real buzz-agent under it)
// against the world's relay and a fake LLM, and restarts it on the same
// state.
type restartRig struct {
	t       testing.TB
	w       *world
	acp     string
	env     []string
	llm     *llmtest.Server
	cmd     *exec.Cmd
	args    []string // more buzz-acp flags
	url     string   // the relay URL buzz-acp is given; "" the world's relay
	dir     string   // working directory of every start
	mu      sync.Mutex
	lasts   []string    // the newest message of every model request, in order
	askedAt []time.Time // when each came
}

func newRestartRig(t testing.TB, w *world) *restartRig {
	r := &restartRig{t: t, w: w, acp: testexe.Link(t, "buzz-acp"), llm: llmtest.New(t), dir: t.TempDir()}
	r.llm.SetHandler(func(req map[string]any) llmtest.Reply {
		msgs, _ := req["messages"].([]any)
		b, _ := json.Marshal(msgs[len(msgs)-1])
		r.mu.Lock()
		r.lasts = append(r.lasts, string(b))
		r.askedAt = append(r.askedAt, time.Now())
		n := len(r.lasts)
		r.mu.Unlock()
		return llmtest.Reply{Text: "answer " + strconv.Itoa(n)}
	})
	skHex, _ := w.agent.AppendHex(nil)
	r.env = []string{"BUZZ_PRIVATE_KEY=" + string(skHex), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + w.stateHome,
		"PATH=" + os.Getenv("PATH"), "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
		"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL=" + r.llm.URL}
	return r
}

// start runs buzz-acp; it is killed at test end if still running.
func (r *restartRig) start() {
	relayURL := r.url
	if relayURL == "" {
		relayURL = r.w.relay.URL()
	}
	cmd := exec.Command(r.acp, append([]string{"--relay-url", relayURL, "--agent-owner", r.w.owner.Public().Hex(),
		"--no-presence", "--no-typing"}, r.args...)...)
	cmd.Env = r.env
	cmd.Dir = r.dir
	cmd.Stderr = r.t.Output()
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.cmd = cmd
	r.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// killAll sends SIGKILL to the harness and to every agent under it.
func (r *restartRig) killAll() {
	kids := childPIDs(r.cmd.Process.Pid)
	if len(kids) == 0 {
		r.t.Fatal("buzz-acp has no agent process to kill")
	}
	r.cmd.Process.Kill()
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	r.cmd.Wait()
}

// requestsFor returns how many model requests had a newest message
// naming event id: how many times the event was answered.
func (r *restartRig) requestsFor(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lasts {
		if strings.Contains(l, id) {
			n++
		}
	}
	return n
}

// lastRequest is the full body of the newest model request.
func (r *restartRig) lastRequest() string {
	b := r.llm.Bodies()
	if len(b) == 0 {
		return ""
	}
	return string(b[len(b)-1])
}

// waitReply waits until the agent has replied in ev's thread (a reply
// stored already counts: the subscription brings stored events first).
func (r *restartRig) waitReply(ev *nostr.Event) {
	r.t.Helper()
	r.w.awaitAgentReply(r.t, "the agent's reply to "+ev.Content, 60*time.Second, ev.ID, nil)
}

// waitAsked waits until the model has been asked about ev.
func (r *restartRig) waitAsked(ev *nostr.Event) {
	r.t.Helper()
	waitFor(r.t, "the model to be asked about "+ev.Content, 60*time.Second, func() bool { return r.requestsFor(ev.ID) > 0 })
}

// waitAnswered waits until the harness state on disk records ev as
// answered: what a kill after that point must not lose.
func (r *restartRig) waitAnswered(ev *nostr.Event) {
	r.t.Helper()
	waitFor(r.t, "the harness state to record "+ev.Content, 30*time.Second, func() bool {
		paths, _ := filepath.Glob(filepath.Join(r.w.stateHome, "buzzbox", "acp", "*", "state.json"))
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), ev.ID) && strings.Contains(string(b), `"session":"ses_`) {
				return true
			}
		}
		return false
	})
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	want := strconv.Itoa(pid)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == want {
			n, _ := strconv.Atoi(e.Name())
			out = append(out, n)
		}
	}
	return out
}

// TestBugRestartForgetsConversation: buzz-acp and buzz-agent killed with
// SIGKILL mid-conversation and started again. Before, the restarted
// harness began a new session (the model never saw the earlier turn) and
// mentions posted while both were down were never answered. Now the
// session is loaded, the missed mentions are answered once, in one batch,
// and nothing answered before is answered again.
func TestBugRestartForgetsConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	w := newWorld(t)
	r := newRestartRig(t, w)
	// Queued: a mention that comes while the catch-up turn runs gets a
	// turn of its own, and each turn is one model request.
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	first := w.mention("remember the word pelican")
	r.waitReply(first)
	r.waitAnswered(first)

	r.killAll()
	down1 := w.mention("posted while down, one")
	down2 := w.mention("posted while down, two")

	r.start()
	r.waitAsked(down2)
	if !strings.Contains(r.lastRequest(), "remember the word pelican") {
		t.Errorf("the catch-up turn did not continue the conversation; model saw:\n%s", r.lastRequest())
	}
	third := w.mention("which word was it?")
	r.waitAsked(third)
	if body := r.lastRequest(); !strings.Contains(body, "remember the word pelican") || !strings.Contains(body, "posted while down, one") {
		t.Errorf("the turn after the restart lost earlier turns; model saw:\n%s", body)
	}
	for _, ev := range []*nostr.Event{first, down1, down2, third} {
		if n := r.requestsFor(ev.ID); n != 1 {
			t.Errorf("%q answered %d times; want once", ev.Content, n)
		}
	}
}

// BenchmarkRestartCatchup measures a restart with 50 mentions waiting:
// from starting buzz-acp (which starts buzz-agent against a fake LLM on
// loopback) to the first reply on the relay. Goal: at most 2 s.
func BenchmarkRestartCatchup(b *testing.B) {
	const waiting = 50
	for range b.N {
		b.StopTimer()
		w := newWorld(b)
		r := newRestartRig(b, w)
		w.seedState(time.Now().Add(-time.Minute)) // the last run answered nothing
		for i := range waiting {
			w.mention("missed " + strconv.Itoa(i))
		}
		b.StartTimer()
		r.start()
		waitFor(b, "the first catch-up reply", 60*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			evs, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"h": {w.channel}}})
			return len(evs) > 0
		})
		b.StopTimer()
		if n := r.requestsFor("missed 0"); n != 1 {
			b.Errorf("the oldest missed mention was answered %d times; want once", n)
		}
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
}

// TestBugAgentCrashForgetsConversation: an agent killed under a running
// harness was replaced by a new one that started every channel afresh.
// The harness now loads the channel's session into the new agent.
func TestBugAgentCrashForgetsConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	w := newWorld(t)
	r := newRestartRig(t, w)
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	first := w.mention("remember the word heron")
	r.waitAsked(first)
	r.waitReply(first)
	// The reply is posted during the turn; buzz-agent keeps the session
	// when the turn ends. Kill it only once the session is on disk.
	waitFor(t, "buzz-agent to keep the session", 30*time.Second, func() bool {
		paths, _ := filepath.Glob(filepath.Join(w.stateHome, "buzzbox", "agent", "*.json"))
		for _, p := range paths {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "remember the word heron") {
				return true
			}
		}
		return false
	})
	// And once the harness has seen the turn end: an agent that dies
	// mid-turn has its sessions dropped (spec §9.9), which is not this bug.
	r.waitAnswered(first)
	kids := childPIDs(r.cmd.Process.Pid)
	if len(kids) == 0 {
		t.Fatal("buzz-acp has no agent process")
	}
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range kids {
		waitFor(t, "the agent gone", 10*time.Second, func() bool { return !processLive(pid) })
	}
	// The next mention finds the agent dead and gets a new one.
	second := w.mention("which word?")
	r.waitAsked(second)
	if body := r.lastRequest(); !strings.Contains(body, "remember the word heron") {
		t.Errorf("the new agent did not continue the conversation; model saw:\n%s", body)
	}
}

// sendAnchor finds the channel and event a prompt asks the agent to
// answer (the base prompt's `buzz messages send` line).
var sendAnchor = regexp.MustCompile(`--channel ([0-9a-f-]{36}) --reply-to ([0-9a-f]{64})`)

// sendMessageCalls are the model's send_message calls answering the
// prompt in req, one per event it names, with content "answer to <id> at <ns>";
// nil when req carries no anchor.
func sendMessageCalls(req map[string]any) []llmtest.Call {
	body, _ := json.Marshal(req)
	text := strings.ReplaceAll(string(body), `\u0060`, "`")
	m := sendAnchor.FindStringSubmatch(text)
	msgs, _ := req["messages"].([]any)
	if m == nil || len(msgs) == 0 {
		return nil
	}
	last, _ := json.Marshal(msgs[len(msgs)-1])
	var calls []llmtest.Call
	for i, id := range soakEventID.FindAllStringSubmatch(strings.ReplaceAll(string(last), `\n`, "\n"), -1) {
		// The send's own time keeps two answers apart: identical content in
		// one second would be one event id, and the relay keeps one.
		content := "answer to " + id[1] + " at " + strconv.FormatInt(time.Now().UnixNano(), 10)
		args, _ := json.Marshal(map[string]string{"channel": m[1], "reply_to": id[1], "content": content})
		calls = append(calls, llmtest.Call{ID: "call_" + strconv.Itoa(i), Name: "buzz-dev-mcp__send_message", Args: string(args)})
	}
	return calls
}

// lastRole is the role of the newest message of a chat request.
func lastRole(req map[string]any) string {
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	role, _ := last["role"].(string)
	return role
}

// waitHandled waits until the harness state on disk lists ev among the
// events of its channel that are done with.
func (r *restartRig) waitHandled(ev *nostr.Event) {
	r.t.Helper()
	waitFor(r.t, "the harness state to list "+ev.Content+" as handled", 60*time.Second, func() bool {
		paths, _ := filepath.Glob(filepath.Join(r.w.stateHome, "buzzbox", "acp", "*", "state.json"))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			st, err := parseHarnessState(b)
			if err != nil {
				continue
			}
			for _, m := range st.Channels {
				for _, id := range m.Handled {
					if id == ev.ID {
						return true
					}
				}
			}
		}
		return false
	})
}

// TestBugAgentKilledAfterAnswerAnswersTwice: the agent posts its answer
// with send_message and is killed with SIGKILL before its turn ends. The
// harness told the thread it could not answer yet and ran the mention
// again on a new agent, which answered a second time. Now it asks the
// relay first, finds the answer, and neither re-runs nor posts a notice:
// the thread holds exactly one message of the agent's.
func TestBugAgentKilledAfterAnswerAnswersTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	w := newWorld(t)
	r := newRestartRig(t, w)
	sends, hung := r.answerThenHang()
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	mention := w.mention("answer me once")
	r.awaitHung(hung)
	r.waitReply(mention)
	kids := childPIDs(r.cmd.Process.Pid)
	if len(kids) == 0 {
		t.Fatal("buzz-acp has no agent process")
	}
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range kids {
		waitFor(t, "the agent gone", 10*time.Second, func() bool { return !processLive(pid) })
	}
	r.waitHandled(mention)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, err := w.io.Query(ctx, nostr.Filter{Kinds: []int{9}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {mention.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || sends.Load() != 1 {
		var texts []string
		for _, e := range evs {
			texts = append(texts, e.Content)
		}
		t.Errorf("the agent's messages in the thread: %q, the model sent %d times; want the one answer, sent once", texts, sends.Load())
	}
}

// plainProxy serves a reverse proxy to w's relay (HTTP, and websockets
// through their upgrade) on one of the world's proxy listeners, whose URL
// the relay answers to, and returns its ws:// URL. intercept, when not
// nil, sees each request first and answers it itself by returning true.
func (w *world) plainProxy(t testing.TB, intercept func(http.ResponseWriter, *http.Request) bool) string {
	t.Helper()
	ln, up := w.takeProxyListener(t)
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: up.Host})
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if intercept != nil && intercept(rw, req) {
			return
		}
		rp.ServeHTTP(rw, req)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "ws://" + ln.Addr().String()
}

// TestRecheckUnknownRunsAgain: when the relay cannot say whether the
// killed agent answered (its query for the agent's messages fails), the
// mention is run again: a second answer beats a lost one.
func TestRecheckUnknownRunsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	w := newWorld(t)
	// A proxy in front of the relay refuses, once told to, every query for
	// the agent's messages: what the check before a re-run asks.
	agentHex := w.agent.Public().Hex()
	var refuse atomic.Bool
	var refused atomic.Int32
	proxyURL := w.plainProxy(t, func(rw http.ResponseWriter, req *http.Request) bool {
		if !refuse.Load() || req.Method != http.MethodPost || req.URL.Path != "/query" {
			return false
		}
		body, _ := io.ReadAll(req.Body)
		var filters []nostr.Filter
		json.Unmarshal(body, &filters)
		for _, f := range filters {
			if len(f.Authors) == 1 && f.Authors[0] == agentHex && f.Tags["h"] != nil {
				refused.Add(1)
				http.Error(rw, "refused by the test", http.StatusInternalServerError)
				return true
			}
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		return false
	})

	r := newRestartRig(t, w)
	r.url = proxyURL
	sends, hung := r.answerThenHang()
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	mention := w.mention("answer me even if unsure")
	r.awaitHung(hung)
	r.waitReply(mention)
	refuse.Store(true)
	for _, pid := range childPIDs(r.cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	waitFor(t, "the mention run again", 60*time.Second, func() bool { return sends.Load() >= 2 })
	if refused.Load() == 0 {
		t.Error("no query for the agent's messages was refused; the test did not test the failure")
	}
}

// answerThenHang scripts the model to answer a mention once with
// send_message and then to hang, so the turn stays open until its agent
// dies; hung is sent to once the answer is out. sends counts the answers
// the model asked for.
func (r *restartRig) answerThenHang() (sends *atomic.Int32, hung chan struct{}) {
	sends, hung = new(atomic.Int32), make(chan struct{}, 1)
	r.llm.SetHandler(func(req map[string]any) llmtest.Reply {
		if lastRole(req) == "tool" {
			if sends.Load() == 1 {
				select {
				case hung <- struct{}{}:
				default:
				}
				return llmtest.Reply{Hang: true}
			}
			return llmtest.Reply{Text: "posted"}
		}
		calls := sendMessageCalls(req)
		if calls == nil {
			return llmtest.Reply{Text: "no anchor in the prompt"}
		}
		sends.Add(1)
		return llmtest.Reply{Calls: calls}
	})
	return sends, hung
}

// awaitHung waits until the model scripted by answerThenHang has been
// asked to go on after its answer.
func (r *restartRig) awaitHung(hung <-chan struct{}) {
	r.t.Helper()
	select {
	case <-hung:
	case <-time.After(60 * time.Second):
		r.t.Fatal("the model was never asked to go on after send_message")
	}
}

// threadOf returns the agent's kind 9 messages naming ev, split into
// answers and the harness's notices (which begin with a warning sign).
func (r *restartRig) threadOf(ev *nostr.Event) (answers, notices []*nostr.Event) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, err := r.w.io.Query(ctx, nostr.Filter{Kinds: []int{9}, Authors: []string{r.w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {ev.ID}}})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, e := range evs {
		if strings.HasPrefix(e.Content, "⚠️") {
			notices = append(notices, e)
		} else {
			answers = append(answers, e)
		}
	}
	return answers, notices
}

// killHarness sends SIGKILL to the harness and to every agent under it.
func (r *restartRig) killHarness() {
	kids := childPIDs(r.cmd.Process.Pid)
	r.cmd.Process.Kill()
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	r.cmd.Wait()
}

// TestBugHarnessKilledAfterAnswerAnswersTwice: buzz-acp and its agent
// killed with SIGKILL after the agent's answer went out, before the turn
// ended. The restarted harness caught the mention up as unanswered and
// answered it again. Now it asks the relay first: one answer.
func TestBugHarnessKilledAfterAnswerAnswersTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	w := newWorld(t)
	r := newRestartRig(t, w)
	sends, hung := r.answerThenHang()
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	mention := w.mention("answer me once, across a restart")
	r.awaitHung(hung)
	r.waitReply(mention)
	r.killHarness()
	r.start()
	r.waitHandled(mention)
	if answers, notices := r.threadOf(mention); len(answers) != 1 || len(notices) != 0 || sends.Load() != 1 {
		t.Errorf("after the restart: %d answers, %d notices, the model sent %d times; want 1, 0 and 1", len(answers), len(notices), sends.Load())
	}
}

// TestBugRestartTakesNoticeForAnswer: the agent dies before answering,
// the harness tells the thread it will keep trying, and is killed before
// the re-run. The restarted harness, checking whether the agent answered,
// must not take that notice for the answer: the mention is answered.
func TestBugRestartTakesNoticeForAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	w := newWorld(t)
	r := newRestartRig(t, w)
	var answer atomic.Bool // until the restart, the model never answers
	asked := make(chan struct{}, 1)
	r.llm.SetHandler(func(req map[string]any) llmtest.Reply {
		if !answer.Load() {
			select {
			case asked <- struct{}{}:
			default:
			}
			return llmtest.Reply{Hang: true}
		}
		if lastRole(req) == "tool" {
			return llmtest.Reply{Text: "posted"}
		}
		if calls := sendMessageCalls(req); calls != nil {
			return llmtest.Reply{Calls: calls}
		}
		return llmtest.Reply{Text: "no anchor in the prompt"}
	})
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	mention := w.mention("answer me after all")
	select {
	case <-asked:
	case <-time.After(60 * time.Second):
		t.Fatal("the model was never asked")
	}
	kids := childPIDs(r.cmd.Process.Pid)
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	waitFor(t, "the notice that the harness keeps trying", 30*time.Second, func() bool {
		_, notices := r.threadOf(mention)
		return len(notices) > 0
	})
	r.killHarness()
	answer.Store(true)
	r.start()
	waitFor(t, "the answer after the restart", 60*time.Second, func() bool {
		answers, _ := r.threadOf(mention)
		return len(answers) > 0
	})
	r.waitHandled(mention)
	if answers, _ := r.threadOf(mention); len(answers) != 1 {
		t.Errorf("%d answers; want 1", len(answers))
	}
}
