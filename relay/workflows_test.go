package relay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// wfChannel makes an open channel owned by k and returns its id.
func wfChannel(t *testing.T, c *nostr.Relay, k testKey) string {
	t.Helper()
	id := "5b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b"
	mustPublish(t, c, signed(t, k, workspace.KindCreateGroup, "", nostr.Tag{"h", id}, nostr.Tag{"name", "ops"}))
	return id
}

func TestWorkflowInvalidDefinitionNamesLine(t *testing.T) {
	owner := newKey(t)
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", t.TempDir(), "--owner", owner.pk)
	c := login(t, url, owner)
	ch := wfChannel(t, c, owner)
	msg := refused(t, c, signed(t, owner, workspace.KindWorkflowDef, "name: x\ntrigger: {on: manual}\nsteps:\n  - id: a\n    action: send_mesage\n",
		nostr.Tag{"d", "6c2d3e4f-5061-4b72-9c83-ad9e8f7a6b5c"}, nostr.Tag{"h", ch}))
	if !strings.Contains(msg, "invalid: workflow line 5, column 13: step \"a\": unknown action \"send_mesage\"") {
		t.Fatalf("refusal %q; want line 5, column 13 and the unknown action", msg)
	}
}

// TestWorkflowApprovalGate: a manual run waits at its gate; a grant from
// a stranger is ignored, the publisher's grant continues it; a deny stops
// it; no answer by the timeout stops it (fail closed).
func TestWorkflowApprovalGate(t *testing.T) {
	owner, stranger := newKey(t), newKey(t)
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", t.TempDir(), "--owner", owner.pk, "--allow", stranger.pk)
	c := login(t, url, owner)
	cs := login(t, url, stranger)
	ch := wfChannel(t, c, owner)
	def := func(d, timeout string) {
		mustPublish(t, c, signed(t, owner, workspace.KindWorkflowDef, `name: deploy
trigger: {on: manual}
steps:
  - id: gate
    action: request_approval
    from: owner
    message: "Deploy {{trigger.inputs.version}}?"
    timeout: `+timeout+`
  - id: go
    if: "{{steps.gate.status}} == approved"
    action: send_message
    text: "deploying {{trigger.inputs.version}} ({{steps.gate.output}})"
`, nostr.Tag{"d", d}, nostr.Tag{"h", ch}))
	}
	seen := map[string]bool{}
	token := func() string {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			evs, _ := query(t, c, nostr.Filter{Kinds: []int{workspace.KindApprovalRequest}, Tags: nostr.TagMap{"h": []string{ch}}})
			for _, ev := range evs {
				tok, _ := tagValue(ev, workspace.TagWorkflowToken)
				if tok != "" && !seen[tok] {
					seen[tok] = true
					return tok
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no approval request")
		return ""
	}
	hash := func(tok string) string { s := sha256.Sum256([]byte(tok)); return hex.EncodeToString(s[:]) }

	runOf := func(d string) runState {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			evs, _ := query(t, c, nostr.Filter{Kinds: []int{workspace.KindWorkflowRun}, Tags: nostr.TagMap{"h": []string{ch}}})
			for _, ev := range evs {
				var st runState
				json.Unmarshal([]byte(ev.Content), &st)
				if strings.HasSuffix(st.Workflow, d) && st.Status != runRunning && st.Status != runWaiting {
					return st
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("run of %s never ended", d)
		return runState{}
	}
	messages := func() int {
		evs, _ := query(t, c, nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": []string{ch}}})
		return len(evs)
	}
	t.Run("grant", func(t *testing.T) {
		const d = "7d3e4f50-6172-4c83-8d94-be0f9a8b7c6d"
		def(d, "1m")
		mustPublish(t, c, signed(t, owner, workspace.KindWorkflowTrigger, `{"version":"1.4"}`, nostr.Tag{"d", d}))
		tok := token()
		mustPublish(t, cs, signed(t, stranger, workspace.KindApprovalGrant, "", nostr.Tag{"d", hash(tok)}))
		time.Sleep(300 * time.Millisecond)
		evs, _ := query(t, c, nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": []string{ch}}})
		if len(evs) != 0 {
			t.Fatalf("a stranger's grant moved the run on: %v", evs[0].Content)
		}
		mustPublish(t, c, signed(t, owner, workspace.KindApprovalGrant, "ok", nostr.Tag{"d", hash(tok)}))
		st := runOf(d)
		if st.Status != runSucceeded || st.Steps[0].By != owner.pk {
			t.Fatalf("run %+v; want succeeded, approved by the owner", st)
		}
		evs, _ = query(t, c, nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": []string{ch}}})
		if len(evs) != 1 || evs[0].Content != "deploying 1.4 (approved by "+owner.pk+")" {
			t.Fatalf("messages %v; want the deploy message once", evs)
		}
	})
	t.Run("deny", func(t *testing.T) {
		const d = "8e4f5061-7283-4d94-9ea5-cf1a0b9c8d7e"
		def(d, "1m")
		mustPublish(t, c, signed(t, owner, workspace.KindWorkflowTrigger, `{"version":"2"}`, nostr.Tag{"d", d}))
		tok := token()
		mustPublish(t, c, signed(t, owner, workspace.KindApprovalDeny, "no", nostr.Tag{"d", hash(tok)}))
		if st := runOf(d); st.Status != runDenied || st.Steps[0].Status != stepDenied || st.Steps[1].Status != "pending" {
			t.Fatalf("run %+v; want denied at the gate", st)
		}
		if n := messages(); n != 1 {
			t.Fatalf("%d messages; a denied run posted", n)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		const d = "9f506172-8394-4ea5-8fb6-d02b1cad9e8f"
		def(d, "2s")
		mustPublish(t, c, signed(t, owner, workspace.KindWorkflowTrigger, `{"version":"3"}`, nostr.Tag{"d", d}))
		token()
		if st := runOf(d); st.Status != runDenied || st.Steps[0].Status != stepTimedOut {
			t.Fatalf("run %+v; want denied by the timeout", st)
		}
		if n := messages(); n != 1 {
			t.Fatalf("%d messages; a timed-out run posted", n)
		}
	})
}

// TestWorkflowScheduleFakeClock moves the relay's clock past a daily
// schedule (in a time zone) and checks it fires once within a second of
// its time, and not again while the clock goes on within the minute.
func TestWorkflowScheduleFakeClock(t *testing.T) {
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk, Now: clock})
	c := login(t, r.URL(), owner)
	ch := wfChannel(t, c, owner)
	at := now.In(kolkata).Truncate(time.Minute).Add(3 * time.Minute)
	cron := fmt.Sprintf("%d %d * * *", at.Minute(), at.Hour())
	mustPublish(t, c, signed(t, owner, workspace.KindWorkflowDef, "name: daily\ntrigger:\n  on: schedule\n  cron: \""+cron+"\"\n  timezone: Asia/Kolkata\nsteps:\n  - {action: send_message, text: standup}\n",
		nostr.Tag{"d", "d3940516-c7d8-4e29-93fa-146f5ae13c23"}, nostr.Tag{"h", ch}))
	set(at.Add(-time.Second))
	time.Sleep(600 * time.Millisecond)
	if runs := runsOf(t, c, ch); len(runs) != 0 {
		t.Fatalf("fired a second early: %+v", runs)
	}
	set(at.Add(200 * time.Millisecond))
	time.Sleep(600 * time.Millisecond)
	for _, s := range []time.Duration{5, 20, 59} {
		set(at.Add(s * time.Second))
		time.Sleep(300 * time.Millisecond)
	}
	runs := runsOf(t, c, ch)
	if len(runs) != 1 {
		t.Fatalf("%d runs; want one", len(runs))
	}
	if late := time.Unix(runs[0].Started, 0).Sub(at); late < -time.Second || late > time.Second {
		t.Fatalf("started %s off its time", late)
	}
}
