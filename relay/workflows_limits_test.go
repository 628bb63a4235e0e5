package relay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/relay/workflow"

	"github.com/nbd-wtf/go-nostr"
)

// newChannel makes an open channel named name owned by k.
func newChannel(t *testing.T, c *nostr.Relay, k testKey, id, name string) string {
	t.Helper()
	mustPublish(t, c, signed(t, k, workspace.KindCreateGroup, "", nostr.Tag{"h", id}, nostr.Tag{"name", name}))
	return id
}

// awaitRuns polls the channel's run records until done says they are as
// wanted, and returns them.
func awaitRuns(t *testing.T, c *nostr.Relay, ch, what string, done func([]runState) bool) []runState {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		runs := runsOf(t, c, ch)
		if done(runs) {
			return runs
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: runs %+v", what, runs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWorkflowLimitsAgainstBinary takes each of the engine's named limits
// to the built buzz-relay and checks it is enforced with the limit named:
// steps per workflow (refused on publish), concurrent runs per channel
// (the run past it recorded as refused), a run's time (stopped), and the
// webhook body size (413).
func TestWorkflowLimitsAgainstBinary(t *testing.T) {
	owner := newKey(t)
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", t.TempDir(), "--owner", owner.pk)
	c := login(t, url, owner)

	t.Run("steps per workflow", func(t *testing.T) {
		ch := newChannel(t, c, owner, "1a2b3c4d-0001-4000-8000-00000000000a", "steps")
		var b strings.Builder
		b.WriteString("name: long\ntrigger: {on: manual}\nsteps:\n")
		for i := range workflow.MaxSteps + 1 {
			fmt.Fprintf(&b, "  - {action: send_message, text: \"step %d\"}\n", i)
		}
		msg := refused(t, c, signed(t, owner, workspace.KindWorkflowDef, b.String(), nostr.Tag{"d", "1a2b3c4d-0001-4000-8000-0000000000d1"}, nostr.Tag{"h", ch}))
		want := fmt.Sprintf("invalid: workflow line %d, column 5: %d steps is over the limit of %d steps per workflow", 4+workflow.MaxSteps, workflow.MaxSteps+1, workflow.MaxSteps)
		if !strings.Contains(msg, want) {
			t.Fatalf("refusal %q; want %q", msg, want)
		}
	})

	t.Run("concurrent runs per channel", func(t *testing.T) {
		ch := newChannel(t, c, owner, "1a2b3c4d-0002-4000-8000-00000000000b", "busy")
		mustPublish(t, c, signed(t, owner, workspace.KindWorkflowDef, "name: gate\ntrigger: {on: message_posted, pattern: \"^go\"}\n"+ownerGateSteps, nostr.Tag{"d", "1a2b3c4d-0002-4000-8000-0000000000d2"}, nostr.Tag{"h", ch}))
		for i := range maxRunsPerChannel + 1 {
			mustPublish(t, c, signed(t, owner, workspace.KindStream, fmt.Sprintf("go %d", i), nostr.Tag{"h", ch}))
		}
		runs := awaitRuns(t, c, ch, "every message's run", func(rs []runState) bool { return len(rs) == maxRunsPerChannel+1 })
		waiting, refusedRuns := 0, 0
		for _, st := range runs {
			switch {
			case st.Status == runWaiting || st.Status == runRunning:
				waiting++
			case st.Status == runFailed && strings.Contains(st.Error, fmt.Sprintf("%d runs going, the limit of concurrent runs per channel", maxRunsPerChannel)):
				refusedRuns++
			}
		}
		if waiting != maxRunsPerChannel || refusedRuns != 1 {
			t.Fatalf("%d runs going, %d refused naming the limit; want %d and 1: %+v", waiting, refusedRuns, maxRunsPerChannel, runs)
		}
	})

	t.Run("run time", func(t *testing.T) {
		ch := newChannel(t, c, owner, "1a2b3c4d-0003-4000-8000-00000000000c", "slow")
		mustPublish(t, c, signed(t, owner, workspace.KindWorkflowDef, `name: slow
trigger: {on: manual}
timeout: 2s
steps:
  - id: gate
    action: request_approval
    from: owner
    message: nobody answers
    timeout: 1h
  - action: send_message
    text: never
`, nostr.Tag{"d", "1a2b3c4d-0003-4000-8000-0000000000d3"}, nostr.Tag{"h", ch}))
		mustPublish(t, c, signed(t, owner, workspace.KindWorkflowTrigger, "", nostr.Tag{"d", "1a2b3c4d-0003-4000-8000-0000000000d3"}))
		runs := awaitRuns(t, c, ch, "the run to stop", func(rs []runState) bool {
			return len(rs) == 1 && rs[0].Status != runWaiting && rs[0].Status != runRunning
		})
		st := runs[0]
		if st.Status != runFailed || st.Error != "stopped: the run time limit of 2s (the definition's timeout) was reached" || st.Steps[0].Status != stepTimedOut || st.Steps[1].Status != "pending" {
			t.Fatalf("run %+v; want failed at the gate, naming the run time limit", st)
		}
		if took := st.Ended - st.Started; took < 1 || took > 4 {
			t.Errorf("the run stopped after %d s; want about 2", took)
		}
	})

	t.Run("webhook body size", func(t *testing.T) {
		ch := newChannel(t, c, owner, "1a2b3c4d-0004-4000-8000-00000000000d", "hooks")
		const id, secret = "1a2b3c4d-0004-4000-8000-0000000000d4", "hook-secret"
		sum := sha256.Sum256([]byte(secret))
		mustPublish(t, c, signed(t, owner, workspace.KindWorkflowDef, "name: hook\ntrigger: {on: webhook, secret_sha256: "+hex.EncodeToString(sum[:])+"}\nsteps:\n  - {action: send_message, text: \"{{trigger.text}}\"}\n",
			nostr.Tag{"d", id}, nostr.Tag{"h", ch}))
		req, _ := http.NewRequest("POST", "http"+strings.TrimPrefix(url, "ws")+hooksPrefix+id, strings.NewReader(strings.Repeat("x", maxWebhookBody+1)))
		req.Header.Set(webhookSecretHeader, secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
		res.Body.Close()
		want := fmt.Sprintf("webhook body over the %d-byte limit", maxWebhookBody)
		if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), want) {
			t.Fatalf("oversized body: %d %q; want 413 saying %q", res.StatusCode, body, want)
		}
		time.Sleep(300 * time.Millisecond)
		if runs := runsOf(t, c, ch); len(runs) != 0 {
			t.Fatalf("the refused call started %d runs", len(runs))
		}
	})
}

// TestWorkflowReactionTrigger: a reaction_added workflow runs once for a
// reaction it names, from anyone who may post (not for another emoji),
// with the reacted-to message as trigger.target; against the built relay.
func TestWorkflowReactionTrigger(t *testing.T) {
	owner := newKey(t)
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", t.TempDir(), "--owner", owner.pk)
	c := login(t, url, owner)
	ch := wfChannel(t, c, owner)
	mustPublish(t, c, signed(t, owner, workspace.KindWorkflowDef, `name: ship
trigger:
  on: reaction_added
  emoji: ["🚀", ":ship:"]
steps:
  - action: send_message
    text: "shipping {{trigger.target}} ({{trigger.text}})"
`, nostr.Tag{"d", "2b3c4d5e-0001-4000-8000-0000000000e1"}, nostr.Tag{"h", ch}))
	msg := signed(t, owner, workspace.KindStream, "release notes", nostr.Tag{"h", ch})
	mustPublish(t, c, msg)
	mustPublish(t, c, signed(t, owner, workspace.KindReaction, "👀", nostr.Tag{"h", ch}, nostr.Tag{"e", msg.ID}))
	mustPublish(t, c, signed(t, owner, workspace.KindReaction, "🚀", nostr.Tag{"h", ch}, nostr.Tag{"e", msg.ID}))
	awaitRuns(t, c, ch, "the reaction's run", func(rs []runState) bool { return len(rs) == 1 && rs[0].Status == runSucceeded })
	time.Sleep(300 * time.Millisecond) // a run for the 👀 would show by now
	if runs := runsOf(t, c, ch); len(runs) != 1 || runs[0].Trigger["target"] != msg.ID || runs[0].Trigger["author"] != owner.pk {
		t.Fatalf("runs %+v; want one, for the 🚀 on the message", runs)
	}
	msgs, _ := query(t, c, nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": []string{ch}}})
	texts := map[string]bool{}
	for _, m := range msgs {
		texts[m.Content] = true
	}
	if want := "shipping " + msg.ID + " (🚀)"; !texts[want] || len(msgs) != 2 {
		t.Fatalf("messages %v; want %q once beside the message", texts, want)
	}
}

// TestAttackWorkflowRunRecordForged: a channel member publishes a run
// record (kind 30622) saying a run was approved; the built relay refuses
// it, as it would show in clients as a run that never happened.
func TestAttackWorkflowRunRecordForged(t *testing.T) {
	owner, member := newKey(t), newKey(t)
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", t.TempDir(), "--owner", owner.pk, "--allow", member.pk)
	c := login(t, url, owner)
	ch := wfChannel(t, c, owner)
	mustPublish(t, c, signed(t, owner, workspace.KindAddUser, "", nostr.Tag{"h", ch}, nostr.Tag{"p", member.pk}))
	cm := login(t, url, member)
	forged := `{"run":"6e7f8091-0000-4000-8000-000000000001","channel":"` + ch + `","status":"succeeded","steps":[{"id":"gate","action":"request_approval","status":"approved","by":"` + owner.pk + `"}]}`
	for _, k := range []struct {
		who string
		key testKey
		c   *nostr.Relay
	}{{"member", member, cm}, {"owner", owner, c}} {
		msg := refused(t, k.c, signed(t, k.key, workspace.KindWorkflowRun, forged, nostr.Tag{"d", "6e7f8091-0000-4000-8000-000000000001"}, nostr.Tag{"h", ch}))
		if !strings.Contains(msg, "kind 30622 is kept by the relay itself") {
			t.Errorf("%s's forged run record: %q; want it refused as the relay's own kind", k.who, msg)
		}
	}
	if runs := runsOf(t, c, ch); len(runs) != 0 {
		t.Fatalf("%d run records stored; want none", len(runs))
	}
}
