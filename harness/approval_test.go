package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/harness/acpclient"
	"buzzbox/internal/acp"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// waitApproval waits for the agent's permission request in the thread of ev.
func waitApproval(t *testing.T, w *world, ev *nostr.Event) *nostr.Event {
	t.Helper()
	var req *nostr.Event
	waitFor(t, "the permission request", 90*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindApprovalRequest}, Authors: []string{w.agent.Public().Hex()},
			Tags: nostr.TagMap{"e": {ev.ID}}})
		if len(evs) > 0 {
			req = evs[0]
		}
		return req != nil
	})
	return req
}

// answerAs publishes a grant (or a deny) of req naming option, signed by key.
func answerAs(w *world, key *nostrkey.Secret, req *nostr.Event, kind int, option string) *nostr.Event {
	return w.publishAs(key, &nostr.Event{Kind: kind, Tags: nostr.Tags{{"h", w.channel}, {"e", req.ID},
		{"p", req.PubKey}, {workspace.TagApprovalOption, option}}})
}

// permissionAnswers are the answers the fake agents got, in order.
func permissionAnswers(w *world) []string {
	var out []string
	for _, l := range w.agentLog() {
		if l.Method == "permission-answer" {
			out = append(out, l.Note)
		}
	}
	return out
}

// TestApprovalGoesToPeople: under --permission-mode default the agent's
// permission request becomes a request event in the thread, naming the
// options, p-tagging the owner; grants from a plain member, from another
// agent of the owner's and a forged owner grant the relay (here a proxy
// in front of it) hands over are ignored; the owner's grant is the
// agent's answer.
func TestApprovalGoesToPeople(t *testing.T) {
	w := newWorld(t)
	p := newRelayProxy(t, w)
	w.startHarness(w.harnessEnv("echo"), "--relay-url", p.URL(), "--permission-mode", "default", "--approval-timeout", "60")
	ev := w.mention("please act @agent")
	req := waitApproval(t, w, ev)
	var opts []string
	for _, tg := range req.Tags {
		if tg[0] == workspace.TagApprovalOption && len(tg) >= 4 {
			opts = append(opts, tg[1]+"/"+tg[2])
		}
	}
	if got := strings.Join(opts, " "); got != "r/reject_once a1/allow_once aa/allow_always" {
		t.Errorf("options = %q", got)
	}
	if !req.Tags.ContainsAny("p", []string{w.owner.Public().Hex()}) || req.Tags.ContainsAny("p", []string{w.stranger.Public().Hex()}) ||
		req.Tags.Find(workspace.TagApprovalExpires) == nil || channelOf(req) != w.channel {
		t.Errorf("request tags = %v", req.Tags)
	}

	answerAs(w, w.stranger, req, workspace.KindApprovalGrant, "a1")
	answerAs(w, w.sibling, req, workspace.KindApprovalGrant, "aa")
	forged := &nostr.Event{Kind: workspace.KindApprovalGrant, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", w.channel}, {"e", req.ID},
		{"p", req.PubKey}, {workspace.TagApprovalOption, "a1"}}}
	w.owner.SignEvent(forged)
	forged.Tags = append(forged.Tags, nostr.Tag{"x", "tampered"}) // the id no longer matches
	p.toHarness("EVENT", approvalSub, forged)
	other := &nostr.Event{Kind: workspace.KindApprovalGrant, CreatedAt: nostr.Now(), Tags: forged.Tags[:4]}
	w.stranger.SignEvent(other)
	other.PubKey = w.owner.Public().Hex() // the stranger's signature under the owner's name
	p.toHarness("EVENT", approvalSub, other)
	// A grant naming a reject option, or an option never offered, is no answer either.
	answerAs(w, w.owner, req, workspace.KindApprovalGrant, "r")
	answerAs(w, w.owner, req, workspace.KindApprovalGrant, "yes")
	time.Sleep(1500 * time.Millisecond)
	if got := permissionAnswers(w); len(got) != 0 {
		t.Fatalf("the agent was answered %v before its owner answered", got)
	}
	answerAs(w, w.owner, req, workspace.KindApprovalGrant, "aa")
	waitFor(t, "the owner's answer", 15*time.Second, func() bool { return len(permissionAnswers(w)) == 1 })
	if got := permissionAnswers(w)[0]; !strings.HasPrefix(got, "aa") {
		t.Errorf("the agent was answered %q; want aa (the owner's choice)", got)
	}
	waitFor(t, "the agent's closing grant", 15*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindApprovalGrant}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {req.ID}}})
		return len(evs) == 1 && evs[0].Tags.Find(workspace.TagApprovalBy)[1] == w.owner.Public().Hex() &&
			evs[0].Tags.Find(workspace.TagApprovalOption)[1] == "aa" && evs[0].Tags.Find(workspace.TagApprovalReason)[1] == workspace.ApprovalAnswered
	})
}

// TestApprovalChannelAdminAnswers: an admin of the channel may answer; a
// deny names the reject option.
func TestApprovalChannelAdminAnswers(t *testing.T) {
	w := newWorld(t)
	w.publish(&nostr.Event{Kind: workspace.KindAddUser, Tags: nostr.Tags{{"h", w.channel}, {"p", w.stranger.Public().Hex(), "", "admin"}}})
	w.startHarness(w.harnessEnv("echo"), "--permission-mode", "default")
	req := waitApproval(t, w, w.mention("please act @agent"))
	answerAs(w, w.stranger, req, workspace.KindApprovalDeny, "r")
	waitFor(t, "the admin's answer", 15*time.Second, func() bool { return len(permissionAnswers(w)) == 1 })
	if got := permissionAnswers(w)[0]; !strings.HasPrefix(got, "r") {
		t.Errorf("the agent was answered %q; want r (the admin's reject)", got)
	}
}

// TestApprovalTimesOut: nobody answering within --approval-timeout is a
// rejection, a notice in the thread and a closing deny from the agent.
func TestApprovalTimesOut(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("echo"), "--permission-mode", "default", "--approval-timeout", "1")
	ev := w.mention("please act @agent")
	req := waitApproval(t, w, ev)
	waitFor(t, "the rejection", 15*time.Second, func() bool { return len(permissionAnswers(w)) == 1 })
	if got := permissionAnswers(w)[0]; !strings.HasPrefix(got, "r") {
		t.Errorf("the agent was answered %q; want r (reject)", got)
	}
	waitFor(t, "the notice and the closing deny", 15*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		notes, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindStream}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {ev.ID}}})
		denies, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindApprovalDeny}, Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {req.ID}}})
		said := false
		for _, n := range notes {
			said = said || strings.Contains(n.Content, "nobody answered") && strings.Contains(n.Content, "1 second")
		}
		return said && len(denies) == 1 && denies[0].Tags.Find(workspace.TagApprovalReason)[1] == workspace.ApprovalTimeout
	})
}

// TestApprovalBypassDecidesAlone: under the default bypass-permissions
// mode a request the agent makes of its own accord is answered by the
// harness as before, and nothing is published.
func TestApprovalBypassDecidesAlone(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("echo"))
	ev := w.mention("please act @agent")
	waitFor(t, "the answer", 15*time.Second, func() bool { return len(permissionAnswers(w)) == 1 })
	if got := permissionAnswers(w)[0]; !strings.HasPrefix(got, "a1") {
		t.Errorf("the agent was answered %q; want a1", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if evs, _ := w.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindApprovalRequest}, Tags: nostr.TagMap{"e": {ev.ID}}}); len(evs) != 0 {
		t.Errorf("a request was published under bypass-permissions: %v", evs[0])
	}
}

// TestApprovalRequestRedactsSecrets: a command that spells out a secret of
// the harness's environment (an API key) reaches the channel without it,
// in the command tag and the text alike; the detail is cut at its limit.
func TestApprovalRequestRedactsSecrets(t *testing.T) {
	secret := "sk-test-" + strings.Repeat("x", 24)
	h := &harness{cfg: &Config{Owner: strings.Repeat("b", 64)}}
	h.env.Environ = []string{"OPENAI_API_KEY=" + secret}
	raw := []byte(`{"toolCallId":"t1","title":"Bash","rawInput":{"command":"curl -H 'Authorization: Bearer ` + secret + `' https://example.com; ` + strings.Repeat("y", 2*maxApprovalDetail) + `"}}`)
	tc := readToolCall(raw).redacted(h.env.Environ)
	ev := h.approvalRequest(approvalScope{channel: "c", ev: &Event{Event: nostr.Event{ID: strings.Repeat("1", 64), PubKey: strings.Repeat("a", 64)}}},
		tc, acpclient.PermissionAsk{Options: []acp.PermissionOption{{OptionID: "ok", Kind: "allow_once", Name: "Allow"}}}, time.Now())
	cmd := ev.Tags.Find(workspace.TagApprovalCommand)
	if len(cmd) < 2 || strings.Contains(cmd[1], secret) || strings.Contains(ev.Content, secret) || !strings.Contains(cmd[1], "[redacted]") {
		t.Errorf("the request carries the secret: %v\n%s", cmd, ev.Content)
	}
	if len(cmd) >= 2 && len(cmd[1]) > maxApprovalDetail+100 {
		t.Errorf("the command tag is %d bytes; want it cut near %d", len(cmd[1]), maxApprovalDetail)
	}
}

// TestApprovalCancelledByStop: the owner's !cancel while a request waits
// answers the agent "cancelled" and closes the request with that reason;
// an allow sent afterwards runs nothing.
func TestApprovalCancelledByStop(t *testing.T) {
	w := newWorld(t)
	w.startHarness(w.harnessEnv("echo"), "--permission-mode", "default", "--approval-timeout", "60")
	req := waitApproval(t, w, w.mention("please act @agent"))
	w.mention("!cancel")
	w.awaitEvent(t, "the agent's closing deny", 30*time.Second, nostr.Filter{Kinds: []int{workspace.KindApprovalDeny},
		Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {req.ID}}}, func(ev *nostr.Event) bool {
		r := ev.Tags.Find(workspace.TagApprovalReason)
		return len(r) >= 2 && r[1] == workspace.ApprovalCancelled
	})
	answerAs(w, w.owner, req, workspace.KindApprovalGrant, "a1")
	waitFor(t, "the agent's answer", 15*time.Second, func() bool { return len(permissionAnswers(w)) == 1 })
	time.Sleep(500 * time.Millisecond)
	if got := permissionAnswers(w); len(got) != 1 || strings.HasPrefix(got[0], "a1") {
		t.Errorf("the agent was answered %v; want one answer, cancelled (no option)", got)
	}
}
