package relay

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"buzzbox/internal/workspace"
	"buzzbox/relay/workflow"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// The workflow engine: definitions (kind 30620, checked on publish by
// checkWorkflowDef) are loaded at start and on every publish; triggers
// (a message, a reaction, a manual run 46020, a schedule, POST
// /hooks/<id>) start
// runs; a 46020 with a run tag re-runs that run with its trigger's
// values. Each run is a relay-signed KindWorkflowRun event whose content is
// its state, replaced after every step, so a client shows the trace and a
// restarted relay resumes each unfinished run at its step. A run's id is
// derived from its trigger, and a run is claimed by storing its first
// state only if none is stored yet: each trigger fires one run.
//
// A workflow acts with its publisher's rights: each step checks, when it
// runs, that the publisher may still post in the channel (or, to set the
// topic, administers it). Messages are signed by the relay and name the
// publisher and the run in their tags.

// Engine limits, each with its reason.
const (
	// maxRunsPerChannel bounds concurrent runs in one channel, so one
	// busy channel cannot hold every goroutine and wake every agent.
	maxRunsPerChannel = 10
	// maxWebhookBody bounds a webhook request body; it becomes
	// trigger.text and must fit a message.
	maxWebhookBody = 64 << 10
	// scheduleTick is how often schedules are checked: the ±1 s promise.
	scheduleTick = 250 * time.Millisecond
	// maxParallelFires bounds the scheduled runs being stored at once:
	// enough for the store to take their first states together, few
	// enough not to starve the relay's other writers.
	maxParallelFires = 16
	// hooksPrefix is the path webhooks are posted to, with the workflow id.
	hooksPrefix = "/hooks/"
	// webhookSecretHeader carries a webhook's secret.
	webhookSecretHeader = "X-Buzz-Webhook-Secret"
)

// Run and step statuses.
const (
	runRunning   = "running"
	runWaiting   = "waiting"
	runSucceeded = "succeeded"
	runFailed    = "failed"
	runDenied    = "denied"
	runCancelled = "cancelled"

	stepApproved = "approved"
	stepDenied   = "denied"
	stepTimedOut = "timed_out"
	stepSkipped  = "skipped"
	stepDone     = "succeeded"
	stepFailed   = "failed"
)

type loadedDef struct {
	addr, id, channel, publisher string
	def                          *workflow.Definition
	next                         time.Time // schedule: next fire time
}

// runState is the content of a KindWorkflowRun event.
type runState struct {
	Run       string            `json:"run"`
	Workflow  string            `json:"workflow"`       // address 30620:pubkey:d
	Name      string            `json:"name,omitempty"` // the definition's, as the run began
	Channel   string            `json:"channel"`
	Publisher string            `json:"publisher"`
	Trigger   map[string]string `json:"trigger"`
	Status    string            `json:"status"`
	Step      int               `json:"step"` // index of the current step
	Started   int64             `json:"started"`
	Deadline  int64             `json:"deadline"`
	Ended     int64             `json:"ended,omitempty"`
	Error     string            `json:"error,omitempty"`
	RerunOf   string            `json:"rerun_of,omitempty"` // the run this one repeats
	Steps     []stepRecord      `json:"steps"`

	// at is the created_at of the run's last record: the next is dated
	// after it (a replacement must be newer), and by the run alone, so a
	// burst of runs does not date the relay's other state ahead.
	at nostr.Timestamp
}

type stepRecord struct {
	ID       string `json:"id"`
	Action   string `json:"action"`
	Status   string `json:"status"`
	Output   string `json:"output,omitempty"`
	Started  int64  `json:"started,omitempty"`
	Ended    int64  `json:"ended,omitempty"`
	Deadline int64  `json:"deadline,omitempty"`
	Token    string `json:"token,omitempty"` // request_approval
	By       string `json:"by,omitempty"`    // who approved or denied
	// Approvers is who may answer a request_approval step: owner,
	// admins or pubkeys, as the definition names them, so a client
	// shows the buttons to those only.
	Approvers []string `json:"approvers,omitempty"`
	Asked     string   `json:"asked,omitempty"` // ask_agent: the mention's id
}

type engine struct {
	r   *Relay
	ctx context.Context
	end context.CancelFunc
	wg  sync.WaitGroup

	mu      sync.Mutex
	defs    map[string]*loadedDef // by address
	running map[string]context.CancelFunc
	perChan map[string]int
	// claiming holds the runs being checked and stored by fire.
	claiming map[string]bool
	wake     map[string]chan *nostr.Event // run id → answers and replies
}

func newEngine(r *Relay) *engine {
	ctx, cancel := context.WithCancel(context.Background())
	return &engine{r: r, ctx: ctx, end: cancel, defs: map[string]*loadedDef{}, running: map[string]context.CancelFunc{},
		perChan: map[string]int{}, wake: map[string]chan *nostr.Event{}, claiming: map[string]bool{}}
}

// start loads the definitions, resumes unfinished runs and starts the
// scheduler.
func (e *engine) start() error {
	ctx := internal(e.ctx)
	ch, err := e.r.store.QueryEvents(ctx, nostr.Filter{Kinds: []int{workspace.KindWorkflowDef}, Limit: maxQueryLimit})
	if err != nil {
		return fmt.Errorf("buzz-relay: load workflows: %w", err)
	}
	for ev := range ch {
		e.load(ev)
	}
	var unfinished []runState
	if err := e.r.loadRecords(ctx, workspace.KindWorkflowRun, func(ev *nostr.Event) {
		var st runState
		if json.Unmarshal([]byte(ev.Content), &st) == nil && (st.Status == runRunning || st.Status == runWaiting) {
			st.at = ev.CreatedAt
			unfinished = append(unfinished, st)
		}
	}); err != nil {
		return err
	}
	for _, st := range unfinished {
		e.r.log.Info("workflow run resumed", "run", st.Run, "step", st.Step)
		e.spawn(st)
	}
	e.wg.Add(1)
	go e.schedule() // ends with e.ctx
	return nil
}

func (e *engine) close() {
	e.end()
	e.wg.Wait()
}

func defAddr(ev *nostr.Event) string {
	return fmt.Sprintf("%d:%s:%s", workspace.KindWorkflowDef, ev.PubKey, ev.Tags.GetD())
}

// load (re)reads a stored definition; one that no longer parses is dropped.
func (e *engine) load(ev *nostr.Event) {
	addr := defAddr(ev)
	d, err := workflow.Parse(ev.Content)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		delete(e.defs, addr)
		return
	}
	ch, _ := tagValue(ev, "h")
	ld := &loadedDef{addr: addr, id: ev.Tags.GetD(), channel: ch, publisher: ev.PubKey, def: d}
	if c := d.Trigger.Cron; c != nil {
		ld.next = c.Next(e.r.cfg.Now().In(d.Trigger.Location))
	}
	e.defs[addr] = ld
}

// checkWorkflowDef refuses a definition that does not parse, naming the
// line, column and mistake; and one without a channel.
func checkWorkflowDef(ev *nostr.Event) string {
	if ev.Kind != workspace.KindWorkflowDef {
		return ""
	}
	if !workspace.IsChannelID(channelOf(ev)) {
		return "invalid: a workflow definition needs an h tag naming its channel"
	}
	if _, err := workflow.Parse(ev.Content); err != nil {
		return "invalid: " + err.Error()
	}
	return ""
}

// saw is called for every stored event that is not the relay's own.
func (e *engine) saw(ev *nostr.Event) {
	if ev.PubKey == e.r.pubkey {
		return
	}
	switch ev.Kind {
	case workspace.KindWorkflowDef:
		e.load(ev)
	case workspace.KindWorkflowTrigger:
		e.manual(ev)
	case workspace.KindWorkflowCancel:
		e.cancel(ev)
	case workspace.KindReaction:
		e.reaction(ev)
	case workspace.KindApprovalGrant, workspace.KindApprovalDeny, workspace.KindStream:
		e.mu.Lock()
		var ws []chan *nostr.Event
		for _, w := range e.wake {
			ws = append(ws, w)
		}
		e.mu.Unlock()
		for _, w := range ws {
			select {
			case w <- ev:
			default:
			}
		}
		if ev.Kind == workspace.KindStream {
			e.message(ev)
		}
	}
}

func (e *engine) byChannel(ch string) []*loadedDef {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*loadedDef
	for _, d := range e.defs {
		if d.channel == ch {
			out = append(out, d)
		}
	}
	return out
}

func (e *engine) message(ev *nostr.Event) {
	ch := channelOf(ev)
	for _, d := range e.byChannel(ch) {
		t := d.def.Trigger
		if t.On != workflow.OnMessage || (t.Pattern != nil && !t.Pattern.MatchString(ev.Content)) {
			continue
		}
		if len(t.From) > 0 && !slices.Contains(t.From, ev.PubKey) {
			continue
		}
		e.fire(d, "event:"+ev.ID, map[string]string{"text": ev.Content, "author": ev.PubKey, "event": ev.ID})
	}
}

// reaction fires the reaction_added workflows of the reaction's channel
// whose emoji and authors it matches.
func (e *engine) reaction(ev *nostr.Event) {
	target := ""
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "e" {
			target = t[1] // NIP-25: the last e tag is the reacted-to event
		}
	}
	for _, d := range e.byChannel(channelOf(ev)) {
		t := d.def.Trigger
		if t.On != workflow.OnReaction || (len(t.Emoji) > 0 && !slices.Contains(t.Emoji, ev.Content)) {
			continue
		}
		if len(t.From) > 0 && !slices.Contains(t.From, ev.PubKey) {
			continue
		}
		e.fire(d, "event:"+ev.ID, map[string]string{"text": ev.Content, "author": ev.PubKey, "event": ev.ID, "target": target})
	}
}

// manual runs a workflow named by a 46020 whose author may post in its
// channel. With a run tag naming an earlier run of the same workflow, it
// re-runs that run: the same trigger values, a new run.
func (e *engine) manual(ev *nostr.Event) {
	id := ev.Tags.GetD()
	e.mu.Lock()
	var d *loadedDef
	for _, x := range e.defs {
		if x.id == id {
			d = x
		}
	}
	e.mu.Unlock()
	if d == nil || e.r.checkChannelWrite(internal(e.ctx), caller{pubkey: ev.PubKey}, &nostr.Event{Kind: workspace.KindStream, PubKey: ev.PubKey, Tags: nostr.Tags{{"h", d.channel}}}) != "" {
		return
	}
	if old, ok := tagValue(ev, workspace.TagWorkflowRun); ok {
		st, found := e.stored(old)
		if !found || st.Workflow != d.addr || st.Status == runRunning || st.Status == runWaiting {
			e.r.log.Info("workflow re-run refused: no finished run of this workflow", "run", old, "workflow", d.addr)
			return
		}
		vals := maps(st.Trigger)
		delete(vals, "channel")
		e.fireRerun(d, "event:"+ev.ID, vals, old)
		return
	}
	vals := map[string]string{"text": ev.Content, "author": ev.PubKey, "event": ev.ID}
	var inputs map[string]any
	if json.Unmarshal([]byte(ev.Content), &inputs) == nil {
		for k, v := range inputs {
			vals["inputs."+k] = fmt.Sprint(v)
		}
	}
	e.fire(d, "event:"+ev.ID, vals)
}

func (e *engine) cancel(ev *nostr.Event) {
	run := ev.Tags.GetD()
	st, ok := e.stored(run)
	if !ok || (ev.PubKey != st.Publisher && !e.r.admin(st.Channel, ev.PubKey)) {
		return
	}
	e.mu.Lock()
	stop := e.running[run]
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (e *engine) schedule() {
	defer e.wg.Done()
	t := time.NewTicker(scheduleTick)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
		}
		now := e.r.cfg.Now()
		var due []struct {
			d  *loadedDef
			at time.Time
		}
		e.mu.Lock()
		for _, d := range e.defs {
			if d.next.IsZero() || now.Before(d.next) {
				continue
			}
			due = append(due, struct {
				d  *loadedDef
				at time.Time
			}{d, d.next})
			d.next = d.def.Trigger.Cron.Next(now.In(d.def.Trigger.Location))
		}
		e.mu.Unlock()
		// Due runs are opened side by side, a few at a time, and started
		// only once all are, so that a thousand workflows on one schedule
		// all start within its second, not after each other's steps.
		var wg sync.WaitGroup
		var mu sync.Mutex
		var opened []*runState
		sem := make(chan struct{}, maxParallelFires)
		for _, x := range due {
			sem <- struct{}{}
			wg.Go(func() { // ends when the run's first state is stored
				defer func() { <-sem }()
				if st, _ := e.open(x.d, "schedule:"+x.at.UTC().Format(time.RFC3339), map[string]string{"time": x.at.Format(time.RFC3339)}, ""); st != nil {
					mu.Lock()
					opened = append(opened, st)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		e.mu.Lock()
		for _, st := range opened {
			e.spawnLocked(*st)
		}
		e.mu.Unlock()
	}
}

// serveHook is POST /hooks/<workflow id>: the secret in
// webhookSecretHeader, the body (≤ maxWebhookBody) as trigger.text.
func (r *Relay) serveHook(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	id := strings.TrimPrefix(req.URL.Path, hooksPrefix)
	r.flows.mu.Lock()
	var d *loadedDef
	for _, x := range r.flows.defs {
		if x.id == id && x.def.Trigger.On == workflow.OnWebhook {
			d = x
		}
	}
	r.flows.mu.Unlock()
	if d == nil {
		http.NotFound(w, req)
		return
	}
	sum := sha256.Sum256([]byte(req.Header.Get(webhookSecretHeader)))
	want, _ := hex.DecodeString(d.def.Trigger.SecretSHA256)
	if subtle.ConstantTimeCompare(sum[:], want) != 1 {
		http.Error(w, "wrong webhook secret", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxWebhookBody+1))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	if len(body) > maxWebhookBody {
		http.Error(w, fmt.Sprintf("webhook body over the %d-byte limit", maxWebhookBody), http.StatusRequestEntityTooLarge)
		return
	}
	key := req.Header.Get("Idempotency-Key")
	if key == "" {
		key = nostr.GeneratePrivateKey()
	}
	vals := map[string]string{"text": string(body)}
	var inputs map[string]any
	if json.Unmarshal(body, &inputs) == nil {
		for k, v := range inputs {
			vals["inputs."+k] = fmt.Sprint(v)
		}
	}
	run, ok := r.flows.fire(d, "webhook:"+key, vals)
	if !ok {
		http.Error(w, "run refused: "+run, http.StatusTooManyRequests)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"run": run})
}

// uuidOf formats the first 16 bytes of a hash as a UUID.
func uuidOf(b []byte) string { return workspace.FormatUUID([16]byte(b[:16])) }

// fire claims and starts the run of d for trigger key; it returns the run
// id and false with a reason when the run was not started.
func (e *engine) fire(d *loadedDef, key string, vals map[string]string) (string, bool) {
	return e.fireRerun(d, key, vals, "")
}

// fireRerun is fire for a run that repeats run rerunOf ("" for none).
func (e *engine) fireRerun(d *loadedDef, key string, vals map[string]string, rerunOf string) (string, bool) {
	st, msg := e.open(d, key, vals, rerunOf)
	if st == nil {
		return msg, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.spawnLocked(*st)
	return st.Run, true
}

// open claims the run of d for trigger key and stores its first state,
// holding a slot of the channel's runs for it; the caller starts it with
// spawnLocked. It returns nil and the reason when the run is not to go.
func (e *engine) open(d *loadedDef, key string, vals map[string]string, rerunOf string) (*runState, string) {
	sum := sha256.Sum256([]byte(d.addr + "\x00" + key))
	run := uuidOf(sum[:])
	vals["channel"] = d.channel
	now := e.r.cfg.Now()
	st := runState{Run: run, Workflow: d.addr, Name: d.def.Name, Channel: d.channel, Publisher: d.publisher, Trigger: vals,
		Status: runRunning, Started: now.Unix(), Deadline: now.Add(d.def.Timeout).Unix(), RerunOf: rerunOf}
	for _, s := range d.def.Steps {
		st.Steps = append(st.Steps, stepRecord{ID: s.ID, Action: s.Action, Status: "pending"})
	}
	// The lock is not held across the store's reads and writes, so that
	// many runs (a schedule shared by a thousand workflows) start at
	// once: claiming marks the run while it is checked and stored, and
	// the channel's slot is taken before the store is written.
	e.mu.Lock()
	if e.claiming[run] {
		e.mu.Unlock()
		return nil, "already ran"
	}
	e.claiming[run] = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.claiming, run)
		e.mu.Unlock()
	}()
	if _, ok := e.stored(run); ok {
		return nil, "already ran"
	}
	if e.r.fan != nil && !e.claim(run, now) {
		return nil, "already ran"
	}
	e.mu.Lock()
	full := e.perChan[d.channel] >= maxRunsPerChannel
	if !full {
		e.perChan[d.channel]++ // the run's slot, taken now so that a run opened beside it sees it
	}
	e.mu.Unlock()
	if full {
		st.Status, st.Error = runFailed, fmt.Sprintf("refused: the channel has %d runs going, the limit of concurrent runs per channel", maxRunsPerChannel)
		e.save(&st)
		return nil, st.Error
	}
	if err := e.save(&st); err != nil {
		e.mu.Lock()
		e.perChan[d.channel]--
		e.mu.Unlock()
		return nil, err.Error()
	}
	return &st, ""
}

// spawn starts a run resumed at start, taking its slot of the channel.
func (e *engine) spawn(st runState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.perChan[st.Channel]++
	e.spawnLocked(st)
}

// spawnLocked starts the run st, whose slot of the channel's runs is
// taken; the slot is given back when the run ends.
func (e *engine) spawnLocked(st runState) {
	ctx, cancel := context.WithCancel(e.ctx)
	e.running[st.Run] = cancel
	wake := make(chan *nostr.Event, 64)
	e.wake[st.Run] = wake
	e.wg.Add(1)
	go func() { // ends when the run does or the relay closes
		defer e.wg.Done()
		e.execute(ctx, &st, wake)
		cancel()
		e.mu.Lock()
		delete(e.running, st.Run)
		delete(e.wake, st.Run)
		e.perChan[st.Channel]--
		e.mu.Unlock()
	}()
}

// claim records run in the database: instances on one database see the
// same triggers, and the one whose insert lands runs it. (The store's
// replace of a run record deletes before it inserts, so the record itself
// cannot be the claim.)
func (e *engine) claim(run string, now time.Time) bool {
	ctx, cancel := context.WithTimeout(e.ctx, fanoutFetchTimeout)
	defer cancel()
	res, err := e.r.fan.pg.DB.ExecContext(ctx, `INSERT INTO buzz_workflow_run (run, claimed_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, run, now.Unix())
	if err != nil {
		e.r.log.Error("claim workflow run", "run", run, "err", err)
		return false // run nothing rather than twice
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1
}

// stored returns the stored state of run.
func (e *engine) stored(run string) (runState, bool) {
	ev := e.r.firstStored(internal(e.ctx), nostr.Filter{Kinds: []int{workspace.KindWorkflowRun}, Authors: []string{e.r.pubkey}, Tags: nostr.TagMap{"d": []string{run}}})
	var st runState
	if ev == nil || json.Unmarshal([]byte(ev.Content), &st) != nil {
		return st, false
	}
	return st, true
}

// save stores and broadcasts the run's state.
func (e *engine) save(st *runState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", st.Run, err)
	}
	ev := nostr.Event{Kind: workspace.KindWorkflowRun, Content: string(b),
		Tags: nostr.Tags{{"d", st.Run}, {"h", st.Channel}, {"a", st.Workflow}, {workspace.TagWorkflowStatus, st.Status}, {"p", st.Publisher}}}
	ev.CreatedAt = max(nostr.Now(), st.at+1)
	st.at = ev.CreatedAt
	if err := ev.Sign(e.r.secret); err != nil {
		return fmt.Errorf("sign run %s: %w", st.Run, err)
	}
	if err := e.r.store.ReplaceEvent(internal(context.Background()), &ev); err != nil {
		return fmt.Errorf("store run %s: %w", st.Run, err)
	}
	e.r.broadcast(&ev)
	return nil
}

func (e *engine) definition(addr string) *workflow.Definition {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d := e.defs[addr]; d != nil {
		return d.def
	}
	return nil
}

func (st *runState) values(def *workflow.Definition) workflow.Values {
	v := workflow.Values{"workflow.name": def.Name, "workflow.run": st.Run}
	for k, x := range st.Trigger {
		v["trigger."+k] = x
	}
	for _, s := range st.Steps {
		v["steps."+s.ID+".status"] = s.Status
		v["steps."+s.ID+".output"] = s.Output
	}
	return v
}

// execute runs st from its current step to the end.
func (e *engine) execute(ctx context.Context, st *runState, wake chan *nostr.Event) {
	def := e.definition(st.Workflow)
	finish := func(status, msg string) {
		st.Status, st.Error, st.Ended = status, msg, e.r.cfg.Now().Unix()
		if err := e.save(st); err != nil {
			e.r.log.Error("workflow run", "run", st.Run, "err", err)
		}
	}
	if def == nil || len(def.Steps) != len(st.Steps) {
		finish(runFailed, "the workflow's definition is gone or changed")
		return
	}
	deadline := time.Unix(st.Deadline, 0)
	overtime := func() string {
		return fmt.Sprintf("stopped: the run time limit of %s (the definition's timeout) was reached", def.Timeout)
	}
	for st.Step < len(def.Steps) {
		if e.ctx.Err() != nil {
			return // the relay is closing: the run resumes at this step on start
		}
		if ctx.Err() != nil {
			finish(runCancelled, "cancelled")
			return
		}
		if !e.r.cfg.Now().Before(deadline) {
			finish(runFailed, overtime())
			return
		}
		s, rec := def.Steps[st.Step], &st.Steps[st.Step]
		vals := st.values(def)
		if rec.Started == 0 {
			rec.Started = e.r.cfg.Now().Unix()
			rec.Status = runRunning
			if s.If != nil && !s.If.Holds(vals) {
				rec.Status, rec.Ended = stepSkipped, rec.Started
				st.Step++
				e.save(st)
				continue
			}
			e.save(st)
		}
		status, out, err := e.step(ctx, st, s, rec, vals, deadline, wake)
		if e.ctx.Err() != nil {
			return
		}
		if ctx.Err() != nil {
			rec.Status = runCancelled
			finish(runCancelled, "cancelled")
			return
		}
		rec.Status, rec.Output, rec.Ended = status, out, e.r.cfg.Now().Unix()
		if (err != nil || status == stepTimedOut) && !e.r.cfg.Now().Before(deadline) {
			// The step stopped waiting because the whole run's time is up.
			rec.Status = stepTimedOut
			finish(runFailed, overtime())
			return
		}
		switch {
		case err != nil:
			rec.Status = stepFailed
			finish(runFailed, fmt.Sprintf("step %s: %v", s.ID, err))
			return
		case status == stepDenied || status == stepTimedOut:
			finish(runDenied, fmt.Sprintf("step %s: %s", s.ID, status))
			return
		}
		st.Step++
		st.Status = runRunning
		e.save(st)
	}
	finish(runSucceeded, "")
}

// mayPost reports whether the publisher may still post in the channel.
func (e *engine) mayPost(st *runState) error {
	probe := &nostr.Event{Kind: workspace.KindStream, PubKey: st.Publisher, Tags: nostr.Tags{{"h", st.Channel}}}
	if msg := e.r.checkChannelWrite(internal(e.ctx), caller{pubkey: st.Publisher}, probe); msg != "" {
		return fmt.Errorf("the workflow's publisher may not post here (%s)", msg)
	}
	return nil
}

// workflowTag names the run's workflow on what it posts: its address, and
// its name for readers to show (a run recorded before names were kept has
// none).
func workflowTag(st *runState) nostr.Tag {
	if st.Name == "" {
		return nostr.Tag{workspace.TagWorkflow, st.Workflow}
	}
	return nostr.Tag{workspace.TagWorkflow, st.Workflow, st.Name}
}

// post signs, stores and broadcasts a message of the run. Its created_at
// is the step's start, so a step repeated after a restart makes the same
// event, which the store keeps once.
func (e *engine) post(st *runState, rec *stepRecord, kind int, content string, tags nostr.Tags) (*nostr.Event, error) {
	ev := nostr.Event{Kind: kind, Content: content, CreatedAt: nostr.Timestamp(rec.Started),
		Tags: append(nostr.Tags{{"h", st.Channel}, workflowTag(st), {workspace.TagWorkflowRun, st.Run, rec.ID}, {workspace.TagWorkflowAttributed, st.Publisher}}, tags...)}
	if err := ev.Sign(e.r.secret); err != nil {
		return nil, err
	}
	skip, err := e.r.addEvent(internal(e.ctx), &ev)
	if err != nil {
		return nil, err
	}
	if !skip {
		e.r.broadcast(&ev)
	}
	return &ev, nil
}

func (e *engine) step(ctx context.Context, st *runState, s workflow.Step, rec *stepRecord, vals workflow.Values, deadline time.Time, wake chan *nostr.Event) (string, string, error) {
	switch s.Action {
	case workflow.ActionSendMessage:
		if err := e.mayPost(st); err != nil {
			return "", "", err
		}
		ev, err := e.post(st, rec, workspace.KindStream, workflow.Render(s.Text, vals), nil)
		if err != nil {
			return "", "", err
		}
		return stepDone, ev.ID, nil
	case workflow.ActionSetTopic:
		if !e.r.admin(st.Channel, st.Publisher) {
			return "", "", fmt.Errorf("the workflow's publisher does not administer the channel")
		}
		topic := workflow.Render(s.Topic, vals)
		ev := nostr.Event{Kind: workspace.KindEditMetadata, CreatedAt: nostr.Timestamp(rec.Started), Tags: nostr.Tags{{"h", st.Channel}, {workspace.TagTopic, topic}}}
		if err := ev.Sign(e.r.secret); err != nil {
			return "", "", err
		}
		if err := e.r.saveEvent(internal(e.ctx), &ev); err == nil {
			e.r.onEventSaved(internal(e.ctx), &ev)
		}
		return stepDone, topic, nil
	case workflow.ActionApproval:
		return e.approval(ctx, st, s, rec, vals, deadline, wake)
	case workflow.ActionAskAgent:
		return e.askAgent(ctx, st, s, rec, vals, deadline, wake)
	case workflow.ActionHTTP:
		out, err := e.r.callWebhook(ctx, s.Method, workflow.Render(s.URL, vals), workflow.Render(s.Body, vals), s.Timeout)
		if err != nil {
			return "", "", err
		}
		return stepDone, out, nil
	}
	return "", "", fmt.Errorf("unknown action %s", s.Action)
}

func (e *engine) waitUntil(rec *stepRecord, timeout time.Duration, deadline time.Time) time.Time {
	if rec.Deadline == 0 {
		rec.Deadline = time.Unix(rec.Started, 0).Add(timeout).Unix()
	}
	until := time.Unix(rec.Deadline, 0)
	if deadline.Before(until) {
		until = deadline
	}
	return until
}

// sleepFor waits on the relay's clock, which tests may move.
func (e *engine) remaining(until time.Time) time.Duration {
	d := until.Sub(e.r.cfg.Now())
	if d > time.Second {
		d = time.Second // recheck the clock each second
	}
	return d
}

func (e *engine) approverOK(st *runState, s workflow.Step, pk string) bool {
	for _, a := range s.From {
		switch a {
		case workflow.ApproverOwner:
			if pk == st.Publisher {
				return true
			}
		case workflow.ApproverAdmins:
			if e.r.admin(st.Channel, pk) {
				return true
			}
		default:
			if pk == a {
				return true
			}
		}
	}
	return false
}

func (e *engine) approval(ctx context.Context, st *runState, s workflow.Step, rec *stepRecord, vals workflow.Values, deadline time.Time, wake chan *nostr.Event) (string, string, error) {
	if err := e.mayPost(st); err != nil {
		return "", "", err
	}
	until := e.waitUntil(rec, s.Timeout, deadline)
	if rec.Token == "" {
		mac := hmac.New(sha256.New, []byte(e.r.secret))
		mac.Write([]byte("workflow-approval\x00" + st.Run + "\x00" + rec.ID))
		rec.Token = uuidOf(mac.Sum(nil))
		rec.Approvers = s.From
		st.Status = runWaiting
		e.save(st)
	}
	sum := sha256.Sum256([]byte(rec.Token))
	hash := hex.EncodeToString(sum[:])
	tags := nostr.Tags{{workspace.TagWorkflowToken, rec.Token}, {workspace.TagApprovalExpires, fmt.Sprint(until.Unix())}}
	for _, a := range s.From {
		if nostr.IsValid32ByteHex(a) {
			tags = append(tags, nostr.Tag{"p", a})
		} else if a == workflow.ApproverOwner {
			tags = append(tags, nostr.Tag{"p", st.Publisher})
		}
	}
	msg := workflow.Render(s.Message, vals) + "\n\nApprove: buzz workflows approve --token " + rec.Token + "   Deny: add --approved false"
	if _, err := e.post(st, rec, workspace.KindApprovalRequest, msg, tags); err != nil {
		return "", "", err
	}
	answer := func(ev *nostr.Event) (string, bool) {
		if ev.Tags.GetD() != hash || !e.approverOK(st, s, ev.PubKey) {
			return "", false
		}
		rec.By = ev.PubKey
		if ev.Kind == workspace.KindApprovalGrant {
			return stepApproved, true
		}
		return stepDenied, true
	}
	// An answer stored while the relay was down counts too.
	if ch, err := e.r.store.QueryEvents(internal(e.ctx), nostr.Filter{Kinds: []int{workspace.KindApprovalGrant, workspace.KindApprovalDeny}, Tags: nostr.TagMap{"d": []string{hash}}}); err == nil {
		var got string
		for ev := range ch {
			if v, ok := answer(ev); ok && got != stepDenied {
				got = v
			}
		}
		if got != "" {
			return got, ev2note(got, rec.By), nil
		}
	}
	for {
		d := e.remaining(until)
		if d <= 0 {
			return stepTimedOut, "no answer by the deadline: denied", nil
		}
		select {
		case <-ctx.Done():
			return "", "", nil
		case <-time.After(d):
		case ev := <-wake:
			if v, ok := answer(ev); ok {
				return v, ev2note(v, rec.By), nil
			}
		}
	}
}

func ev2note(status, by string) string { return status + " by " + by }

func (e *engine) askAgent(ctx context.Context, st *runState, s workflow.Step, rec *stepRecord, vals workflow.Values, deadline time.Time, wake chan *nostr.Event) (string, string, error) {
	if err := e.mayPost(st); err != nil {
		return "", "", err
	}
	until := e.waitUntil(rec, s.Timeout, deadline)
	ev, err := e.post(st, rec, workspace.KindStream, "nostr:"+npub(s.Agent)+" "+workflow.Render(s.Text, vals), nostr.Tags{{"p", s.Agent}})
	if err != nil {
		return "", "", err
	}
	rec.Asked = ev.ID
	isReply := func(r *nostr.Event) bool {
		if r.Kind != workspace.KindStream || r.PubKey != s.Agent || channelOf(r) != st.Channel {
			return false
		}
		for _, t := range r.Tags {
			if len(t) >= 2 && t[0] == "e" && t[1] == ev.ID {
				return true
			}
		}
		return false
	}
	if ch, err := e.r.store.QueryEvents(internal(e.ctx), nostr.Filter{Kinds: []int{workspace.KindStream}, Authors: []string{s.Agent}, Tags: nostr.TagMap{"e": []string{ev.ID}}}); err == nil {
		var reply *nostr.Event
		for r := range ch {
			if isReply(r) && (reply == nil || r.CreatedAt < reply.CreatedAt) {
				reply = r
			}
		}
		if reply != nil {
			return stepDone, reply.Content, nil
		}
	}
	for {
		d := e.remaining(until)
		if d <= 0 {
			return "", "", fmt.Errorf("the agent did not reply by the deadline")
		}
		select {
		case <-ctx.Done():
			return "", "", nil
		case <-time.After(d):
		case r := <-wake:
			if isReply(r) {
				return stepDone, r.Content, nil
			}
		}
	}
}

func npub(hex string) string {
	s, err := nip19.EncodePublicKey(hex)
	if err != nil {
		return hex
	}
	return s
}
