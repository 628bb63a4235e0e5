package relay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
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
