package relay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

func runsOf(t *testing.T, c *nostr.Relay, ch string) []runState {
	t.Helper()
	evs, reason := query(t, c, nostr.Filter{Kinds: []int{workspace.KindWorkflowRun}, Tags: nostr.TagMap{"h": []string{ch}}})
	if reason != "" {
		t.Fatalf("query runs: %s", reason)
	}
	var out []runState
	for _, ev := range evs {
		var st runState
		if err := json.Unmarshal([]byte(ev.Content), &st); err != nil {
			t.Fatalf("run content %q: %v", ev.Content, err)
		}
		out = append(out, st)
	}
	return out
}

// TestWorkflowKillResumesOnce kills the relay with SIGKILL while a run
// waits at its approval gate, restarts it on the same data dir, grants
// the approval and checks that the run finishes once: one run record,
// one approval request, one message.
func TestWorkflowKillResumesOnce(t *testing.T) {
	exe := testexe.Link(t, "buzz-relay")
	owner := newKey(t)
	dir := t.TempDir()
	cmd, url := runRelayArgs(t, exe, "--data", dir, "--owner", owner.pk)
	c := login(t, url, owner)
	ch := wfChannel(t, c, owner)
	const d = "a0617283-94a5-4fb6-a0c7-e13c2dbe0f90"
	mustPublish(t, c, signed(t, owner, workspace.KindWorkflowDef, `name: release
trigger: {on: manual}
steps:
  - id: gate
    action: request_approval
    from: owner
    message: release?
    timeout: 5m
  - id: post
    action: send_message
    text: "released after {{steps.gate.status}}"
`, nostr.Tag{"d", d}, nostr.Tag{"h", ch}))
	mustPublish(t, c, signed(t, owner, workspace.KindWorkflowTrigger, "", nostr.Tag{"d", d}))
	var tok string
	for deadline := time.Now().Add(10 * time.Second); tok == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		evs, _ := query(t, c, nostr.Filter{Kinds: []int{workspace.KindApprovalRequest}, Tags: nostr.TagMap{"h": []string{ch}}})
		if len(evs) > 0 {
			tok, _ = tagValue(evs[0], workspace.TagWorkflowToken)
		}
	}
	if tok == "" {
		t.Fatal("no approval request")
	}
	cmd.Process.Kill()
	cmd.Wait()

	_, url = runRelayArgs(t, exe, "--data", dir, "--owner", owner.pk)
	c = login(t, url, owner)
	sum := sha256.Sum256([]byte(tok))
	mustPublish(t, c, signed(t, owner, workspace.KindApprovalGrant, "", nostr.Tag{"d", hex.EncodeToString(sum[:])}))
	var runs []runState
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if runs = runsOf(t, c, ch); len(runs) == 1 && runs[0].Status == runSucceeded {
			break
		}
	}
	if len(runs) != 1 || runs[0].Status != runSucceeded {
		t.Fatalf("runs after restart %+v; want one, succeeded", runs)
	}
	msgs, _ := query(t, c, nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": []string{ch}}})
	reqs, _ := query(t, c, nostr.Filter{Kinds: []int{workspace.KindApprovalRequest}, Tags: nostr.TagMap{"h": []string{ch}}})
	if len(msgs) != 1 || msgs[0].Content != "released after approved" || len(reqs) != 1 {
		t.Fatalf("%d messages (%v), %d approval requests; want one of each", len(msgs), msgs, len(reqs))
	}
}

// TestWorkflowScheduleFiresOnTimeOnce runs a schedule of every 2 seconds
// (six-field cron, in a time zone) for about 7 seconds and checks each
// fire time started one run, within a second of its time.
func TestWorkflowScheduleFiresOnTimeOnce(t *testing.T) {
	exe := testexe.Link(t, "buzz-relay")
	owner := newKey(t)
	_, url := runRelayArgs(t, exe, "--data", t.TempDir(), "--owner", owner.pk)
	c := login(t, url, owner)
	ch := wfChannel(t, c, owner)
	mustPublish(t, c, signed(t, owner, workspace.KindWorkflowDef, `name: tick
trigger:
  on: schedule
  cron: "*/2 * * * * *"
  timezone: Asia/Kolkata
steps:
  - action: send_message
    text: "tick {{trigger.time}}"
`, nostr.Tag{"d", "b1728394-a5b6-4c07-b1d8-f24d3ecf1a01"}, nostr.Tag{"h", ch}))
	time.Sleep(7 * time.Second)
	runs := runsOf(t, c, ch)
	if len(runs) < 3 || len(runs) > 4 {
		t.Fatalf("%d runs in 7 s of a 2 s schedule", len(runs))
	}
	seen := map[string]bool{}
	for _, st := range runs {
		at, err := time.Parse(time.RFC3339, st.Trigger["time"])
		if err != nil {
			t.Fatalf("trigger time %q: %v", st.Trigger["time"], err)
		}
		if !strings.HasSuffix(st.Trigger["time"], "+05:30") || at.Second()%2 != 0 {
			t.Fatalf("fire time %s: want an even second in Asia/Kolkata", st.Trigger["time"])
		}
		if seen[st.Trigger["time"]] {
			t.Fatalf("%s fired twice", st.Trigger["time"])
		}
		seen[st.Trigger["time"]] = true
		if late := time.Unix(st.Started, 0).Sub(at); late < -time.Second || late > time.Second {
			t.Fatalf("run for %s started %s off", at, late)
		}
	}
}

// TestWorkflowWebhookSecret: a wrong or missing secret is refused with
// 401 and starts nothing; an oversized body gets 413; the right secret
// starts one run whose message carries the body.
func TestWorkflowWebhookSecret(t *testing.T) {
	exe := testexe.Link(t, "buzz-relay")
	owner := newKey(t)
	_, url := runRelayArgs(t, exe, "--data", t.TempDir(), "--owner", owner.pk)
	c := login(t, url, owner)
	ch := wfChannel(t, c, owner)
	const id, secret = "c2839405-b6c7-4d18-82e9-035e4fd02b12", "s3cret-of-the-hook"
	sum := sha256.Sum256([]byte(secret))
	mustPublish(t, c, signed(t, owner, workspace.KindWorkflowDef, `name: hook
trigger:
  on: webhook
  secret_sha256: `+hex.EncodeToString(sum[:])+`
steps:
  - action: send_message
    text: "build {{trigger.inputs.status}}"
`, nostr.Tag{"d", id}, nostr.Tag{"h", ch}))
	hook := "http" + strings.TrimPrefix(url, "ws") + hooksPrefix + id
	post := func(secret, body string) int {
		req, _ := http.NewRequest("POST", hook, strings.NewReader(body))
		if secret != "" {
			req.Header.Set(webhookSecretHeader, secret)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post("", `{"status":"green"}`); code != http.StatusUnauthorized {
		t.Fatalf("no secret: %d", code)
	}
	if code := post("s3cret-of-the-hooK", `{"status":"green"}`); code != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d", code)
	}
	if code := post(secret, strings.Repeat("x", maxWebhookBody+1)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d", code)
	}
	time.Sleep(300 * time.Millisecond)
	if runs := runsOf(t, c, ch); len(runs) != 0 {
		t.Fatalf("refused calls started %d runs", len(runs))
	}
	if code := post(secret, `{"status":"green"}`); code != http.StatusOK {
		t.Fatalf("right secret: %d", code)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		msgs, _ := query(t, c, nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": []string{ch}}})
		if len(msgs) == 1 && msgs[0].Content == "build green" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("messages %v; want the hook's one", msgs)
		}
	}
}

// TestWorkflowTwoInstancesRunEachTriggerOnce: two relays on one
// PostgreSQL both load a workflow and both see each trigger (a schedule
// of every 2 seconds, messages published on either instance); each
// trigger still makes one run.
func TestWorkflowTwoInstancesRunEachTriggerOnce(t *testing.T) {
	cl := newCluster(t)
	ins := cl.start(2)
	a, b := login(t, ins[0].url, cl.owner), login(t, ins[1].url, cl.owner)
	ch := wfChannel(t, a, cl.owner)
	mustPublish(t, a, signed(t, cl.owner, workspace.KindWorkflowDef, `name: echo
trigger:
  on: message_posted
  pattern: "^ping"
steps:
  - action: send_message
    text: "pong {{trigger.text}}"
`, nostr.Tag{"d", "e4a5b6c7-d8e9-4f0a-91b2-c3d4e5f60718"}, nostr.Tag{"h", ch}))
	mustPublish(t, b, signed(t, cl.owner, workspace.KindWorkflowDef, `name: tick
trigger: {on: schedule, cron: "*/2 * * * * *"}
steps:
  - action: send_message
    text: "tick {{trigger.time}}"
`, nostr.Tag{"d", "f5b6c7d8-e9fa-4b1b-a2c3-d4e5f6071829"}, nostr.Tag{"h", ch}))
	time.Sleep(500 * time.Millisecond) // both instances have both definitions
	for i, c := range []*nostr.Relay{a, b, a, b} {
		mustPublish(t, c, signed(t, cl.owner, workspace.KindStream, fmt.Sprintf("ping %d", i), nostr.Tag{"h", ch}))
	}
	time.Sleep(6 * time.Second)
	runs := runsOf(t, a, ch)
	ticks, pings := map[string]int{}, map[string]int{}
	for _, st := range runs {
		if st.Trigger["time"] != "" {
			ticks[st.Trigger["time"]]++
		} else {
			pings[st.Trigger["text"]]++
		}
	}
	if len(pings) != 4 || len(ticks) < 2 {
		t.Fatalf("pings %v, ticks %v; want 4 pings and at least 2 ticks", pings, ticks)
	}
	for k, n := range pings {
		if n != 1 {
			for _, st := range runs {
				t.Logf("run %s %s %v", st.Run, st.Status, st.Trigger)
			}
			t.Fatalf("%q ran %d times", k, n)
		}
	}
	for k, n := range ticks {
		if n != 1 {
			t.Fatalf("tick %s ran %d times", k, n)
		}
	}
	msgs, _ := query(t, a, nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": []string{ch}}})
	if want := 4 + 4 + len(ticks); len(msgs) != want {
		t.Fatalf("%d messages; want %d (4 pings, 4 pongs, %d ticks)", len(msgs), want, len(ticks))
	}
}

// ownerGateSteps is the steps of a workflow that waits for the owner's
// approval (10 minutes), for tests that need a run to stay waiting.
const ownerGateSteps = `steps:
  - id: gate
    action: request_approval
    from: owner
    message: wait
    timeout: 10m
`

// TestAttackWorkflowActsWithPublisherRights: a plain member's workflow
// may post but not set the topic (the member may not); a stranger's
// cancel of the owner's run is ignored, the owner's cancel ends it.
func TestAttackWorkflowActsWithPublisherRights(t *testing.T) {
	exe := testexe.Link(t, "buzz-relay")
	owner, member := newKey(t), newKey(t)
	_, url := runRelayArgs(t, exe, "--data", t.TempDir(), "--owner", owner.pk, "--allow", member.pk)
	co, cm := login(t, url, owner), login(t, url, member)
	ch := wfChannel(t, co, owner)
	mustPublish(t, cm, signed(t, member, workspace.KindJoinRequest, "", nostr.Tag{"h", ch}))
	const mine = "06172839-4a5b-4c6d-8e7f-8091a2b3c4d5"
	mustPublish(t, cm, signed(t, member, workspace.KindWorkflowDef, `name: topic
trigger: {on: manual}
steps:
  - action: set_channel_topic
    topic: hijacked
`, nostr.Tag{"d", mine}, nostr.Tag{"h", ch}))
	mustPublish(t, cm, signed(t, member, workspace.KindWorkflowTrigger, "", nostr.Tag{"d", mine}))
	var st runState
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && st.Status != runFailed; time.Sleep(50 * time.Millisecond) {
		for _, r := range runsOf(t, co, ch) {
			st = r
		}
	}
	if st.Status != runFailed || !strings.Contains(st.Error, "does not administer") {
		t.Fatalf("member's topic run %+v; want failed for want of rights", st)
	}
	meta, _ := query(t, co, nostr.Filter{Kinds: []int{workspace.KindGroupMetadata}, Tags: nostr.TagMap{"d": []string{ch}}})
	for _, m := range meta {
		if v, _ := tagValue(m, workspace.TagTopic); v == "hijacked" {
			t.Fatal("the member's workflow set the topic")
		}
	}

	const gate = "17283940-5b6c-4d7e-8f80-91a2b3c4d5e6"
	mustPublish(t, co, signed(t, owner, workspace.KindWorkflowDef, "name: wait\ntrigger: {on: manual}\n"+ownerGateSteps, nostr.Tag{"d", gate}, nostr.Tag{"h", ch}))
	mustPublish(t, co, signed(t, owner, workspace.KindWorkflowTrigger, "", nostr.Tag{"d", gate}))
	var run string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && run == ""; time.Sleep(50 * time.Millisecond) {
		for _, r := range runsOf(t, co, ch) {
			if strings.HasSuffix(r.Workflow, gate) && r.Status == runWaiting {
				run = r.Run
			}
		}
	}
	if run == "" {
		t.Fatal("the gate run never waited")
	}
	status := func() string {
		for _, r := range runsOf(t, co, ch) {
			if r.Run == run {
				return r.Status
			}
		}
		return ""
	}
	mustPublish(t, cm, signed(t, member, workspace.KindWorkflowCancel, "", nostr.Tag{"d", run}))
	time.Sleep(500 * time.Millisecond)
	if s := status(); s != runWaiting {
		t.Fatalf("after a member's cancel the run is %s; want still waiting", s)
	}
	mustPublish(t, co, signed(t, owner, workspace.KindWorkflowCancel, "", nostr.Tag{"d", run}))
	for deadline := time.Now().Add(5 * time.Second); status() != runCancelled; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the owner's cancel the run is %s", status())
		}
	}
}

// TestAttackWorkflowHTTPStep: call_webhook reaches an exactly listed
// address and passes the answer on; it refuses an unlisted host, a
// redirect to an unlisted host, and a listed name that resolves to a
// loopback address not itself listed.
func TestAttackWorkflowHTTPStep(t *testing.T) {
	hits := make(chan string, 10)
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits <- "second " + req.URL.Path
		w.Write([]byte("second"))
	}))
	defer srv2.Close()
	srv1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits <- "first " + req.URL.Path
		if req.URL.Path == "/redirect" {
			http.Redirect(w, req, srv2.URL+"/after", http.StatusFound)
			return
		}
		w.Write([]byte("green"))
	}))
	defer srv1.Close()
	_, port2, _ := net.SplitHostPort(strings.TrimPrefix(srv2.URL, "http://"))
	exe := testexe.Link(t, "buzz-relay")
	owner := newKey(t)
	_, url := runRelayArgs(t, exe, "--data", t.TempDir(), "--owner", owner.pk,
		"--workflow-http-allow", strings.TrimPrefix(srv1.URL, "http://")+",localhost:"+port2)
	c := login(t, url, owner)
	ch := wfChannel(t, c, owner)
	run := func(d, target string) runState {
		t.Helper()
		mustPublish(t, c, signed(t, owner, workspace.KindWorkflowDef, `name: call
trigger: {on: manual}
steps:
  - id: call
    action: call_webhook
    method: GET
    url: "`+target+`"
  - action: send_message
    text: "status {{steps.call.output}}"
`, nostr.Tag{"d", d}, nostr.Tag{"h", ch}))
		mustPublish(t, c, signed(t, owner, workspace.KindWorkflowTrigger, "", nostr.Tag{"d", d}))
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			for _, st := range runsOf(t, c, ch) {
				if strings.HasSuffix(st.Workflow, d) && st.Status != runRunning {
					return st
				}
			}
		}
		t.Fatalf("run of %s never ended", target)
		return runState{}
	}
	if st := run("28394051-6c7d-4e8f-9091-a2b3c4d5e6f7", srv1.URL+"/ok"); st.Status != runSucceeded || st.Steps[0].Output != "green" {
		t.Fatalf("listed address: %+v", st)
	}
	if got := <-hits; got != "first /ok" {
		t.Fatalf("server saw %s", got)
	}
	refusals := []struct{ d, target, want string }{
		{"39405162-7d8e-4f90-a1a2-b3c4d5e6f708", "http://example.invalid/", "not in --workflow-http-allow"},
		{"4a516273-8e9f-4a01-b2b3-c4d5e6f70819", srv1.URL + "/redirect", "redirect to"},
		{"5b627384-9fa0-4b12-83c4-d5e6f708192a", "http://localhost:" + port2 + "/", "internal address"},
	}
	for _, r := range refusals {
		st := run(r.d, r.target)
		if st.Status != runFailed || !strings.Contains(st.Error, r.want) {
			t.Fatalf("%s: run %+v; want failed with %q", r.target, st, r.want)
		}
	}
	close(hits)
	for h := range hits {
		if strings.HasPrefix(h, "second") {
			t.Fatalf("the unlisted server was reached: %s", h)
		}
	}
}
