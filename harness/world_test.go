package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/leakcheck"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace/relayclient"
	"buzzbox/relay"
)

// world is a relay with an owner, an agent and one channel.
type world struct {
	t        testing.TB
	relay    *relay.Relay
	owner    *nostrkey.Secret
	agent    *nostrkey.Secret
	stranger *nostrkey.Secret // a relay member who is not the owner
	sibling  *nostrkey.Secret // another agent of the same owner
	channel  string
	logPath  string
	pub      *relayclient.Subscriber // the owner's connection
	io       *relayclient.Client
	cancel   context.CancelFunc
	dataDir  string
	exited   chan struct{}  // closed when the last harness started has returned
	proxyLns []net.Listener // listeners for newRelayProxy, whose URLs the relay answers to

	stateHome string // XDG_STATE_HOME of every harness the world starts: restarts share it

	logs      *logWatch     // what the harnesses the world starts log
	listening chan struct{} // closed when the last harness started listens
	running   *harness      // that harness; read it after listening is closed
}

func mustSecret(t testing.TB) *nostrkey.Secret {
	s, err := nostrkey.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func startRelay(t testing.TB, dataDir, addr string, owner, agent *nostrkey.Secret, others ...*nostrkey.Secret) *relay.Relay {
	return startRelayNamed(t, dataDir, addr, nil, owner, agent, others...)
}

// startRelayNamed starts a relay that also answers to the given ws:// URLs
// (proxies in front of it): AUTH and NIP-98 tokens may name them.
func startRelayNamed(t testing.TB, dataDir, addr string, names []string, owner, agent *nostrkey.Secret, others ...*nostrkey.Secret) *relay.Relay {
	allow := []string{agent.Public().Hex()}
	for _, o := range others {
		allow = append(allow, o.Public().Hex())
	}
	cfg := relay.Config{DataDir: dataDir, Owner: owner.Public().Hex(), Allow: allow,
		Logger: slog.New(slog.DiscardHandler), EventsPerSecond: relayRate, EventBurst: relayBurst}
	if len(names) > 0 {
		// Naming the relay's own address as well needs it before the
		// relay is built, so the listener is made here.
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		cfg.PublicURL, cfg.OtherURLs = "ws://"+ln.Addr().String(), names
		r, err := relay.StartListener(cfg, ln)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r, err := relay.Start(cfg, addr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// worldProxies is how many proxies (newRelayProxy) one world can have; the
// relay must know their URLs from the start, as tokens name them.
const worldProxies = 2

// relayRate and relayBurst lift the relay's per-key write limits so that
// bursts in tests and benchmarks are not refused.
const (
	relayRate  = 100000
	relayBurst = 100000
)

// newWorld starts a world that ends with the test; goroutines the world,
// the harnesses it starts or the test started that are still running then
// fail the test.
func newWorld(t testing.TB) *world {
	leakcheck.Check(t)
	w := &world{t: t, owner: mustSecret(t), agent: mustSecret(t), stranger: mustSecret(t), sibling: mustSecret(t), dataDir: t.TempDir(), stateHome: t.TempDir(), logs: newLogWatch()}
	var names []string
	for range worldProxies {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		w.proxyLns = append(w.proxyLns, ln)
		names = append(names, "ws://"+ln.Addr().String())
	}
	w.relay = startRelayNamed(t, w.dataDir, "127.0.0.1:0", names, w.owner, w.agent, w.stranger, w.sibling)
	t.Cleanup(func() { w.relay.Close() })
	w.logPath = filepath.Join(t.TempDir(), "agent.log")
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.pub = newRelayConn(w.relay.URL(), w.owner, nil, 4096, slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { defer close(done); w.pub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-w.pub.Connected():
	case <-time.After(10 * time.Second):
		t.Fatal("owner could not log in to the relay")
	}
	w.io = newRelayIO(w.relay.URL(), w.owner, "", w.pub)
	t.Cleanup(w.io.Close)
	w.io.ProbeOrWebsocket(ctx)
	w.channel = "6f1c2d4e-1111-4000-8000-0000000000ab"
	w.addChannel(w.channel, "general")
	return w
}

// addChannel creates a stream channel with the agent, the stranger and
// the sibling in it.
func (w *world) addChannel(id, name string) { w.addChannelType(id, name, "stream") }

func (w *world) addChannelType(id, name, typ string) {
	w.publish(&nostr.Event{Kind: 9007, Tags: nostr.Tags{{"h", id}, {"name", name}, {"visibility", "open"}, {"channel_type", typ}}})
	w.publish(&nostr.Event{Kind: 9000, Tags: nostr.Tags{{"h", id}, {"p", w.agent.Public().Hex(), "", "member"},
		{"p", w.stranger.Public().Hex(), "", "member"}, {"p", w.sibling.Public().Hex(), "", "member"}}})
}

// publishAs signs ev with key and stores it.
func (w *world) publishAs(key *nostrkey.Secret, ev *nostr.Event) *nostr.Event {
	w.t.Helper()
	ev.CreatedAt = nostr.Now()
	if err := key.SignEvent(ev); err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	io := newRelayIO(w.relay.URL(), key, "", w.pub)
	defer io.Close()
	io.SetBridge(w.io.Bridge())
	if _, err := io.Publish(ctx, ev); err != nil {
		w.t.Fatalf("publish kind %d: %v", ev.Kind, err)
	}
	return ev
}

// publish signs ev as the owner and stores it on the relay.
func (w *world) publish(ev *nostr.Event) *nostr.Event {
	w.t.Helper()
	if ev.CreatedAt == 0 {
		ev.CreatedAt = nostr.Now()
	}
	if err := w.owner.SignEvent(ev); err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.io.Publish(ctx, ev); err != nil {
		w.t.Fatalf("publish kind %d: %v", ev.Kind, err)
	}
	return ev
}

// mention posts a kind 9 that p-tags the agent.
func (w *world) mention(text string, extra ...nostr.Tag) *nostr.Event {
	tags := nostr.Tags{{"h", w.channel}}
	tags = append(tags, extra...)
	tags = append(tags, nostr.Tag{"p", w.agent.Public().Hex()})
	return w.publish(&nostr.Event{Kind: 9, Content: text, Tags: tags})
}

// harnessEnv is the environment a harness under test runs with.
func (w *world) harnessEnv(mode string, extra ...string) proc.Env {
	exe, _ := os.Executable()
	skHex, _ := w.agent.AppendHex(nil)
	env := append(os.Environ(), "BUZZ_PRIVATE_KEY="+string(skHex), envFakeAgent+"="+mode, envFakeLog+"="+w.logPath, "XDG_STATE_HOME="+w.stateHome)
	return proc.Env{Environ: append(env, extra...), Dir: w.t.TempDir(), Exe: exe, Stderr: w.t.Output()}
}

// startHarness runs the harness until the test ends; it returns a
// channel closed when it has stopped, with its error.
func (w *world) startHarness(env proc.Env, args ...string) (stop func() error) {
	w.t.Helper()
	return w.startHarnessTiming(env, timing{retryBase: 20 * time.Millisecond, respawn: 10 * time.Millisecond}, args...)
}

func (w *world) startHarnessTiming(env proc.Env, tm timing, args ...string) (stop func() error) {
	exe, _ := os.Executable()
	base := []string{"--relay-url", w.relay.URL(), "--agent-owner", w.owner.Public().Hex(),
		"--agent-command", exe, "--mcp-command", "", "--no-presence"}
	cfg, err := LoadConfig(append(base, args...), env)
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	exited := make(chan struct{})
	w.exited = exited
	started, listening := tm.started, make(chan struct{})
	w.listening = listening
	tm.started = func(h *harness) {
		w.running = h
		close(listening)
		if started != nil {
			started(h)
		}
	}
	go func() {
		errc <- run(ctx, cfg, env, w.logs.logger(w.t), tm)
		close(exited)
	}()
	var once sync.Once
	var res error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case res = <-errc:
			case <-time.After(60 * time.Second):
				w.t.Error("harness did not stop within 60s")
			}
		})
		return res
	}
	w.t.Cleanup(func() { stop() })
	return stop
}

// agentLog reads what the fake agents received.
func (w *world) agentLog() []fakeLogLine {
	f, err := os.Open(w.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []fakeLogLine
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var l fakeLogLine
			if json.Unmarshal(line, &l) == nil {
				out = append(out, l)
			}
		}
		if err == io.EOF || err != nil {
			return out
		}
	}
}

// waitFor polls what another process writes; see testexe.WaitFor.
var waitFor = testexe.WaitFor

// prompts returns the text of every session/prompt the agents received.
func (w *world) prompts() []string {
	var out []string
	for _, l := range w.agentLog() {
		if l.Method != "session/prompt" {
			continue
		}
		var p struct {
			Prompt []struct {
				Text string `json:"text"`
			} `json:"prompt"`
		}
		json.Unmarshal(l.Params, &p)
		var parts []string
		for _, b := range p.Prompt {
			parts = append(parts, b.Text)
		}
		out = append(out, strings.Join(parts, "\n\x00\n"))
	}
	return out
}

func (w *world) count(method string) int {
	n := 0
	for _, l := range w.agentLog() {
		if l.Method == method {
			n++
		}
	}
	return n
}

// seenReactions counts live 👀 reactions by the agent, on the given
// events only when any are given.
func (w *world) seenReactions(on ...*nostr.Event) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, err := w.io.Query(ctx, nostr.Filter{Kinds: []int{7}, Authors: []string{w.agent.Public().Hex()}})
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range evs {
		if e.Content != emojiSeen {
			continue
		}
		if len(on) == 0 {
			n++
			continue
		}
		for _, o := range on {
			if e.Tags.FindWithValue("e", o.ID) != nil {
				n++
			}
		}
	}
	return n
}

// mentionRetry posts a mention, retrying while the relay restarts.
func (w *world) mentionRetry(t testing.TB, text string) *nostr.Event {
	ev := &nostr.Event{Kind: 9, Content: text, CreatedAt: nostr.Now(),
		Tags: nostr.Tags{{"h", w.channel}, {"p", w.agent.Public().Hex()}}}
	w.publishRetry(t, ev)
	return ev
}

// publishRetry signs ev as the owner and publishes it, retrying while the
// relay restarts.
func (w *world) publishRetry(t testing.TB, ev *nostr.Event) {
	t.Helper()
	if err := w.owner.SignEvent(ev); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := w.io.Publish(ctx, ev)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish while the relay restarts: %v", err)
		}
		// The subject is publishing while the relay is down: retry after
		// a pause, as a client would, until the deadline.
		time.Sleep(50 * time.Millisecond)
	}
}
