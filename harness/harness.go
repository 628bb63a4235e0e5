package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"buzzbox/harness/acpclient"
	"buzzbox/harness/observer"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"buzzbox/internal/acp"
	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nipoa"
	"buzzbox/internal/workspace/relayclient"
)

// version is what clientInfo reports.
const version = "buzzbox"

// Main runs buzz-acp until a signal, !shutdown or a fatal error.
func Main(ctx context.Context, args []string, env proc.Env) int {
	_ = proc.NoDump() // the agent key is in this environment; best effort
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if isSubcommand(args) {
		return subcommand(ctx, args, env)
	}
	log := NewLogger(env)
	cfg, err := LoadConfig(args, env)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		reportErr(env, err)
		return 2
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if err := Run(ctx, cfg, env, log); err != nil {
		reportErr(env, err)
		return 1
	}
	return 0
}

func reportErr(env proc.Env, err error) {
	fmt.Fprintln(env.Err(), err)
	var ce *ConfigError
	if errors.As(err, &ce) && ce.Hint != "" {
		fmt.Fprintln(env.Err(), "hint: "+ce.Hint)
	}
}

// NewLogger builds buzz-acp's stderr logger: text, or JSON when BUZZ_ACP_LOG_JSON
// is set; level from BUZZ_ACP_LOG_LEVEL (debug, info, warn, error).
func NewLogger(env proc.Env) *slog.Logger {
	var level slog.Level
	if v := env.Getenv(workspace.EnvACPLogLevel); v != "" {
		level.UnmarshalText([]byte(v))
	}
	opts := &slog.HandlerOptions{Level: level}
	if env.Getenv(workspace.EnvACPLogJSON) != "" {
		return slog.New(slog.NewJSONHandler(env.Err(), opts))
	}
	return slog.New(slog.NewTextHandler(env.Err(), opts))
}

// timing holds the durations tests shorten; zero fields take the spec's.
type timing struct {
	retryBase time.Duration
	respawn   time.Duration
	// stdinTimeout replaces agentWriteTimeout for the agents started.
	stdinTimeout time.Duration
	// backstop replaces inflightBackstop.
	backstop time.Duration
	// started, when set, receives the harness once it is listening.
	started func(*harness)
	// prompting, when set, is told of each batch as its prompt is sent.
	prompting func(batch []*Event, at time.Time)
	// ended, when set, is called on a turn's goroutine after the turn's
	// work and before the loop is told it ended.
	ended func(h *harness, channel string)
	// obsEvery replaces observerPublishEvery, obsPerWindow observerPerWindow.
	obsEvery     time.Duration
	obsPerWindow int
	// firstWord replaces firstWordNotice.
	firstWord time.Duration
	// noStatus publishes no turn status (the load benchmark's baseline).
	noStatus bool
}

// harness is one running buzz-acp. Queue, slot and channel state belong to
// the loop goroutine; other goroutines hand it closures through do.
type harness struct {
	cfg     *Config
	env     proc.Env
	log     *slog.Logger
	rc      *relayclient.Subscriber
	io      *relayclient.Client
	chans   *channelCache
	matcher *ruleMatcher
	spec    acpclient.Spec
	cwd     string
	t       timing
	started time.Time

	loop     chan func()
	quit     chan int // exit code of a requested shutdown
	quitOnce sync.Once

	// Owned by the loop goroutine.
	queues     map[string]*chanState
	slots      []*slot
	subscribed map[string]bool
	memberSeen *idSet
	memberTime map[string]int64
	gens       map[string]int // session generation per channel; a bump invalidates
	lastWork   time.Time
	heartbeat  bool
	stopping   bool
	models     map[string]string                  // channel → model chosen by an observer switch_model
	switchAcks map[string]observer.ControlRequest // channel → switch_model whose final result waits for its session
	waking     bool                               // a lazy pool's first agent is starting (lifecycle "waking" sent)
	startErr   error                              // why the last agent start failed; nil once one starts
	poolDown   bool                               // no agent could be started at all; the harness keeps listening to say so

	// ownerKey is the NIP-44 conversation key between the agent and the
	// owner (core memory, turn metrics, observer frames), computed once.
	ownerKey func() ([32]byte, error)

	obs    *observer.Bus       // observer frames (§15); always recorded
	obsPub *observer.Publisher // publishes them; nil without --relay-observer or an owner
	reacts *reactions
	status *statusPub     // turn status events (turnstatus.go)
	pubs   sync.WaitGroup // NIP-AM metrics being published; shutdown waits
	// spawns counts agent starts under way; shutdown waits for them and
	// stops what they started. halt, closed by shutdown, ends the ones
	// still waiting out their delay.
	spawns   sync.WaitGroup
	halt     chan struct{}
	strays   []*acpclient.Agent // started once shutdown had begun: shutdown stops them
	retired  sync.WaitGroup     // agents being stopped by retire; shutdown waits
	setup    *setupState        // non-nil in setup mode: no agents, nudges only
	siblings *siblingCache
	profiles *profileCache
	threads  *threadSet // the threads the agent is in (--follow-threads)
	// prSeen holds the pull request comments already taken (intake's
	// alone): both pull request subscriptions carry some.
	prSeen *idSet
	// approvals routes the agent's permission requests to people.
	approvals *approvals
	// live is the presence loop's view of pause and usage (pause.go);
	// pauseTold, owned by the loop, the events told the agent is paused.
	live      *liveBox
	pauseTold map[string]bool
	// ownNotices holds the ids of notices posted as the agent (reply.go).
	ownNotices noticeIDs
	// store is what survives a restart: sessions, pending and answered
	// events per channel. Owned by the loop goroutine.
	store *stateStore
	// catchBuf holds a channel's stored events until the relay's EOSE,
	// so a catch-up is one batch. Owned by the intake goroutine.
	catchBuf map[string][]*Event
}

// Run connects, subscribes and serves until ctx ends or a shutdown.
func Run(ctx context.Context, cfg *Config, env proc.Env, log *slog.Logger) error {
	return run(ctx, cfg, env, log, timing{})
}

func run(ctx context.Context, cfg *Config, env proc.Env, log *slog.Logger, t timing) error {
	if t.retryBase == 0 {
		t.retryBase = retryBase
	}
	if t.respawn == 0 {
		t.respawn = acpclient.RespawnBase
	}
	if t.firstWord == 0 {
		t.firstWord = firstWordNotice
	}
	if t.backstop == 0 {
		t.backstop = inflightBackstop
	}
	var authTag nostr.Tag
	canonTag := ""
	if cfg.AuthTag != "" {
		var tag []string
		if err := jsonUnmarshal(cfg.AuthTag, &tag); err == nil && len(tag) == 4 && tag[0] == nipoa.TagName {
			authTag = tag
			canonTag = jsonString(tag)
		}
	}
	cwd := env.Dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if cwd == "" {
		cwd = "/"
	}
	if cfg.MCPKeyFile == "" && cfg.MCPCommand != "" && cfg.Secret != nil {
		// The sidecar reads the agent key from a file, not its environment.
		if path, err := writeMCPKeyFile(env.Getenv, cfg.Secret); err != nil {
			log.Warn("the sidecar gets the agent key in its environment", "err", err)
		} else {
			cfg.MCPKeyFile = path
			defer os.Remove(path)
		}
	}
	h := &harness{
		cfg: cfg, env: env, log: log, cwd: cwd, t: t, started: time.Now(),
		loop: make(chan func(), 1024), quit: make(chan int, 1), halt: make(chan struct{}),
		queues: map[string]*chanState{}, subscribed: map[string]bool{},
		memberSeen: newIDSet(memberDedupGen), memberTime: map[string]int64{}, gens: map[string]int{},
		lastWork: time.Now(), models: map[string]string{}, switchAcks: map[string]observer.ControlRequest{},
		obs: observer.NewBus(),
	}
	h.rc = newRelayConn(cfg.RelayURL, cfg.Secret, authTag, cfg.EventBuffer, log)
	h.io = newRelayIO(cfg.RelayURL, cfg.Secret, canonTag, h.rc)
	defer h.io.Close()
	h.chans = &channelCache{io: h.io, agent: cfg.AgentHex, m: map[string]channelInfo{}}
	h.threads = newThreadSet()
	h.prSeen = newIDSet(memberDedupGen)
	h.reacts = newReactions(h.io, cfg.Secret, log)
	h.status = newStatusPub(h)
	h.status.off = t.noStatus
	h.siblings = &siblingCache{io: h.io, m: map[string]*nipoa.Tag{}}
	h.profiles = &profileCache{io: h.io, m: map[string]cachedProfile{}}
	h.spec = agentSpecFor(cfg, env, version)
	h.spec.OnToolCall = h.status.toolCall
	h.approvals = newApprovals()
	h.spec.Ask, h.spec.AskTimeout = h.ask, cfg.ApprovalTimeout
	cli, dropCLI := buzzCLI(env, log)
	defer dropCLI()
	if cli != "" {
		h.spec.Env = proc.WithEnv(h.spec.Env, workspace.EnvCLI, cli)
	}
	h.ownerKey = sync.OnceValues(func() ([32]byte, error) { return conversationKey(cfg.Secret, cfg.Owner) })
	if t.stdinTimeout > 0 {
		h.spec.WriteTimeout = t.stdinTimeout
	}
	h.obs.Emit(observer.FrameHarnessStarted, observer.NoScope, map[string]any{"version": version, "agentPubkey": cfg.AgentHex,
		"ownerPubkey": nullable(cfg.Owner), "agents": cfg.Agents, "lazyPool": cfg.LazyPool, "relayUrl": cfg.RelayURL})
	if cfg.RelayObserver {
		if cfg.Owner == "" {
			log.Warn("--relay-observer needs an owner (--agent-owner or BUZZ_AUTH_TAG); no observer frames are published")
		} else {
			p, err := newObserverPub(h)
			if err != nil {
				return err
			}
			h.obsPub = p
			h.obs.RecordRaw() // before any agent starts
		}
	}
	if raw := env.Getenv(workspace.EnvACPSetupPayload); strings.TrimSpace(raw) != "" {
		s, err := parseSetup(raw)
		if err != nil {
			return err
		}
		h.setup = s
		log.Warn("setup mode: no agent is started; mentions get a reply saying what to configure")
	}
	h.matcher = newRuleMatcher(h.rules(), cfg.AgentHex)
	h.catchBuf = map[string][]*Event{}
	stateDir, err := harnessStateDir(cfg.StateDir, env.Getenv, cfg.RelayURL, cfg.AgentHex)
	if err != nil {
		log.Warn("no state dir; sessions and answered events are not kept across restarts", "err", err)
	}
	h.store = openStateStore(stateDir, cfg.RelayURL, cfg.AgentHex, log)
	h.live = newLiveBox()
	h.live.set(func(l *liveState) {
		l.paused, l.day = h.store.paused(), budgetDay(time.Now())
		l.spent = h.store.daySpend(l.day)
	})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watermark := time.Now().Unix()
	relayErr := make(chan error, 1)
	var bg sync.WaitGroup
	// Every background goroutine ends with ctx; wait for them on any return.
	defer bg.Wait()
	defer cancel()
	bg.Add(1)
	// Ends when ctx is cancelled (after shutdown) or the first connection fails for good.
	go func() {
		defer bg.Done()
		if err := h.rc.Run(ctx); err != nil {
			relayErr <- fmt.Errorf("buzz-acp: %w", err)
			return
		}
		relayErr <- nil
	}()
	select {
	case <-h.rc.Connected():
	case err := <-relayErr:
		if err == nil {
			return nil
		}
		return err
	case <-ctx.Done():
		return nil
	}
	if _, err := h.io.ProbeOrWebsocket(ctx); err != nil {
		log.Warn("the relay's NIP-11 document could not be read; reads and writes go over the websocket", "err", err)
	}
	log.Info("relay reads", "http_bridge", h.io.Bridge())
	bg.Add(1)
	go func() { // ends with ctx
		defer bg.Done()
		h.status.run(ctx)
	}()
	if h.obsPub != nil {
		bg.Add(1)
		go func() { // ends with ctx, or after shutdown's stop has flushed it
			defer bg.Done()
			h.obsPub.Run(ctx)
		}()
	}

	chans, err := discover(ctx, h.io, cfg.AgentHex)
	if err != nil {
		return err
	}
	for _, c := range chans {
		h.chans.put(c)
	}
	chans = h.scopeChannels(chans)
	if !cfg.LazyPool && h.setup == nil {
		if err := h.startPool(ctx); err != nil {
			return err
		}
	} else {
		h.slots = make([]*slot, cfg.Agents)
		for i := range h.slots {
			h.slots[i] = &slot{idx: i, sessions: map[string]*sessionState{}}
		}
	}
	for _, c := range chans {
		floor := watermark
		if cfg.Catchup > 0 {
			floor = h.store.floor(c.ID, time.Now().Add(-cfg.Catchup).Unix(), watermark)
			if floor < watermark {
				log.Info("catching up", "channel", c.ID, "since", time.Unix(floor, 0).UTC().Format(time.RFC3339))
			}
		}
		if h.subscribeChannel(ctx, c.ID, floor) {
			h.subscribed[c.ID] = true
		}
	}
	h.store.started(time.Unix(watermark, 0))
	h.store.save()
	h.rc.Subscribe(ctx, "membership-notif", nostr.Filter{Kinds: []int{workspace.KindMemberAdded, workspace.KindMemberRemoved},
		Tags: nostr.TagMap{"p": {cfg.AgentHex}}}, relayclient.SubOptions{Floor: watermark, Member: true})
	h.rc.Subscribe(ctx, stopSub, stopFilter(), relayclient.SubOptions{Floor: time.Now().Unix()})
	h.rc.Subscribe(ctx, controlSub, controlFilter(cfg.AgentHex), relayclient.SubOptions{Floor: time.Now().Unix()})
	h.rc.Subscribe(ctx, ownSub, nostr.Filter{Kinds: []int{workspace.KindStream, workspace.KindStreamV2}, Authors: []string{cfg.AgentHex}},
		relayclient.SubOptions{Floor: time.Now().Unix()})
	for name, f := range prFilters(cfg.AgentHex) {
		h.rc.Subscribe(ctx, name, f, relayclient.SubOptions{Floor: watermark})
	}
	h.rc.Subscribe(ctx, approvalSub, nostr.Filter{Kinds: []int{workspace.KindApprovalGrant, workspace.KindApprovalDeny},
		Tags: nostr.TagMap{"p": {cfg.AgentHex}}}, relayclient.SubOptions{Floor: time.Now().Unix()})
	if h.obsPub != nil {
		h.rc.Subscribe(ctx, observer.ControlSub, nostr.Filter{Kinds: []int{workspace.KindObserverFrame},
			Tags: nostr.TagMap{"p": {cfg.AgentHex}}}, relayclient.SubOptions{Floor: time.Now().Unix()})
	}
	log.Info("listening", "channels", len(chans), "agent", cfg.AgentHex, "owner", cfg.Owner, "subscribe", cfg.Subscribe)
	h.lifecycle(observer.LifecycleListening, "")
	if !cfg.LazyPool && h.setup == nil {
		h.lifecycle(observer.LifecycleReady, "")
	}

	bg.Add(1)
	// Intake ends when ctx ends.
	go func() {
		defer bg.Done()
		h.intake(ctx)
	}()
	if !cfg.NoPresence {
		bg.Add(1)
		go func() { // ends with ctx
			defer bg.Done()
			h.presenceLoop(ctx)
		}()
	}
	if t.started != nil {
		t.started(h)
	}
	code := h.serve(ctx)
	h.shutdown(ctx)
	if code != 0 {
		return fmt.Errorf("buzz-acp: stopped: no agent left alive")
	}
	return nil
}

func (h *harness) rules() []*Rule {
	if h.setup != nil && h.cfg.Subscribe != "config" {
		kinds := h.cfg.Kinds
		if len(kinds) == 0 {
			kinds = []int{workspace.KindStream, workspace.KindApprovalRequest}
		}
		return []*Rule{{Name: "mentions", AllChannels: true, Kinds: kinds, RequireMention: true, PromptTag: "@mention"}}
	}
	switch h.cfg.Subscribe {
	case "config":
		return h.cfg.Rules
	case "all":
		return []*Rule{{Name: "all", AllChannels: true, Kinds: h.cfg.Kinds, PromptTag: "all"}}
	}
	kinds := h.cfg.Kinds
	if len(kinds) == 0 {
		kinds = defaultWakeKinds()
	}
	return []*Rule{{Name: "mentions", AllChannels: true, Kinds: kinds, RequireMention: !h.cfg.NoMentionFilter, PromptTag: "@mention"}}
}

// scopeChannels intersects discovery with --channels. Channels named by
// --channels that discovery did not find are kept (type unknown), so a
// plain NIP-01 relay without channel metadata still works.
func (h *harness) scopeChannels(found []channelInfo) []channelInfo {
	if len(h.cfg.Channels) == 0 || h.cfg.Subscribe == "config" {
		return found
	}
	byID := map[string]channelInfo{}
	for _, c := range found {
		byID[c.ID] = c
	}
	var out []channelInfo
	for _, id := range h.cfg.Channels {
		c, ok := byID[id]
		if !ok {
			h.log.Warn("channel from --channels not found by discovery; subscribing anyway", "channel", id)
			c = channelInfo{ID: id, Name: "unknown", Type: "unknown"}
			h.chans.put(c)
		}
		out = append(out, c)
	}
	return out
}

// channelFilter merges the applicable rules into one REQ filter (§5.1);
// ok is false when no rule applies.
func (h *harness) channelFilter(channel string) (nostr.Filter, bool) {
	var rules []*Rule
	for _, r := range h.matcher.rules {
		if r.appliesTo(channel) {
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 {
		return nostr.Filter{}, false
	}
	f := nostr.Filter{Tags: nostr.TagMap{"h": {channel}}}
	wildcard := false
	mention := true
	kinds := map[int]bool{}
	for _, r := range rules {
		if len(r.Kinds) == 0 {
			wildcard = true
		}
		for _, k := range r.Kinds {
			kinds[k] = true
		}
		if !r.RequireMention {
			mention = false
		}
	}
	if !wildcard {
		for k := range kinds {
			f.Kinds = append(f.Kinds, k)
		}
		sort.Ints(f.Kinds)
		if h.cfg.Subscribe != "config" {
			f.Kinds = rules[0].Kinds // keep the configured order
		}
	}
	if mention && !h.hearsUnmentioned(channel) {
		f.Tags["p"] = []string{h.cfg.AgentHex}
	}
	return f, true
}

func (h *harness) subscribeChannel(ctx context.Context, channel string, floor int64) bool {
	f, ok := h.channelFilter(channel)
	if !ok {
		return false
	}
	h.rc.Subscribe(ctx, "ch-"+channel, f, relayclient.SubOptions{Floor: floor, MarkEOSE: true}) // intake flushes a catch-up at each replay's end
	return true
}

func jsonString(v any) string {
	b, _ := jsonMarshal(v)
	return string(b)
}

// mcpServers builds the sidecar entry (§13) for a session.
func (h *harness) mcpServers(ch *channelInfo) []acp.StdioServer {
	if h.cfg.MCPCommand == "" {
		return []acp.StdioServer{}
	}
	cmd := h.cfg.MCPCommand
	var args []string
	name := strings.TrimSuffix(filepath.Base(cmd), filepath.Ext(filepath.Base(cmd)))
	if cmd == "buzz-dev-mcp" && h.env.Exe != "" {
		cmd, args, name = h.env.Exe, []string{"buzz-dev-mcp"}, "buzz-dev-mcp"
	}
	if name == "" || name == "." || name == "/" {
		name = "mcp"
	}
	skHex, _ := h.cfg.Secret.AppendHex(nil)
	nsec, _ := nip19.EncodePrivateKey(string(skHex))
	env := []acp.NameValue{{Name: workspace.EnvRelayURL, Value: h.cfg.RelayURL}, {Name: workspace.EnvPrivateKey, Value: nsec}}
	if h.cfg.MCPKeyFile != "" {
		env[1] = acp.NameValue{Name: workspace.EnvNostrPrivateKeyFile, Value: h.cfg.MCPKeyFile}
	}
	if h.cfg.AuthTag != "" {
		env = append(env, acp.NameValue{Name: workspace.EnvAuthTag, Value: h.cfg.AuthTag})
	}
	if h.cfg.DisplayName != "" {
		env = append(env, acp.NameValue{Name: workspace.EnvDisplayName, Value: h.cfg.DisplayName})
	}
	if ch != nil {
		switch {
		case ch.Type == "stream":
			env = append(env, acp.NameValue{Name: "BUZZ_GIT_ORIGIN_CHANNEL_ID", Value: ch.ID})
		case h.cfg.SessionTitle != "":
			env = append(env, acp.NameValue{Name: "BUZZ_GIT_ORIGIN_AGENT_NAME", Value: h.cfg.SessionTitle})
		}
	}
	if args == nil {
		args = []string{}
	}
	return []acp.StdioServer{{Name: name, Command: cmd, Args: args, Env: env}}
}
