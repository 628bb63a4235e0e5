package harness

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
)

// touchModel is a fake model (OpenAI chat) that answers each prompt by
// asking buzz-agent's shell to touch a file named for the event the
// prompt is about, in its working directory (the shell's sandbox lets it
// write there); once the shell has answered it says what the
// tool said and ends the turn.
func touchModel() func(map[string]any) llmtest.Reply {
	anchor := replyAnchor()
	return func(req map[string]any) llmtest.Reply {
		if lastIsTool(req) {
			return llmtest.Reply{Text: "finished"}
		}
		msgs, _ := req["messages"].([]any)
		body, _ := json.Marshal(msgs[len(msgs)-1]) // the session's history holds the earlier prompts' anchors
		_, ev, ok := findAnchor(anchor, string(body))
		if !ok {
			return llmtest.Reply{Text: "no anchor found"}
		}
		args, _ := json.Marshal(map[string]string{"command": "touch approved-" + ev[:12]})
		return llmtest.Reply{Calls: []llmtest.Call{{ID: "call_1", Name: "buzz-dev-mcp__shell", Args: string(args)}}}
	}
}

// buzzAs runs the built buzz CLI signed by key against w's relay and
// returns its stdout; it fails the test on a non-zero exit unless
// mayFail.
func buzzAs(t *testing.T, w *world, key *nostrkey.Secret, mayFail bool, args ...string) string {
	t.Helper()
	sk, _ := key.AppendHex(nil)
	cmd := exec.Command(testexe.Path(t), append([]string{"buzz"}, args...)...)
	cmd.Env = append(os.Environ(), "BUZZ_RELAY_URL="+w.relay.URL(), "BUZZ_PRIVATE_KEY="+string(sk))
	out, err := cmd.Output()
	if err != nil && !mayFail {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("buzz %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// TestApprovalRuleEndToEnd: buzz-agent, with an approval rule matching
// `touch`, under buzz-acp (in its default bypass-permissions mode) asks
// before running the command; `buzz approvals list` shows the request;
// the owner's `buzz approvals answer --allow-once` runs it, `--reject`
// does not, and a plain member's allow is ignored; unanswered, the
// command is rejected after --approval-timeout with a notice.
func TestApprovalRuleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	w := newWorld(t)
	rules := filepath.Join(t.TempDir(), "rules")
	os.WriteFile(rules, []byte("# commands a person must allow\ntouch\ngit push\n"), 0o600)
	llm := llmtest.New(t)
	llm.SetHandler(touchModel())
	env := w.agentEnv(t, "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
		"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL="+llm.URL, "HOME="+t.TempDir(), "BUZZ_AGENT_APPROVAL_RULES="+rules)
	stop := w.runHarness(t, env, timing{}, "--approval-timeout", "120")
	ran := func(ev *nostr.Event) bool {
		_, err := os.Stat(filepath.Join(env.Dir, "approved-"+ev.ID[:12]))
		return err == nil
	}

	// Allowed once by the owner, through the CLI.
	a := w.mention("touch it")
	req := waitApproval(t, w, a)
	if got := req.Tags.Find(workspace.TagApprovalCommand); len(got) < 2 || got[1] != "touch approved-"+a.ID[:12] {
		t.Errorf("request command tag = %v", got)
	}
	if got := req.Tags.Find(workspace.TagApprovalRule); len(got) < 2 || got[1] != "touch" {
		t.Errorf("request rule tag = %v", got)
	}
	var listed []struct {
		ID      string `json:"id"`
		Command string `json:"command"`
		Options []struct{ ID, Kind string }
	}
	if err := json.Unmarshal([]byte(buzzAs(t, w, w.owner, false, "approvals", "list", "--channel", w.channel)), &listed); err != nil || len(listed) != 1 ||
		listed[0].ID != req.ID || len(listed[0].Options) != 3 {
		t.Fatalf("approvals list = %+v (%v); want the one request with three options", listed, err)
	}
	if ran(a) {
		t.Fatal("the command ran before anyone allowed it")
	}
	// Two answers at once, or an option the request does not offer, are
	// refused by the CLI before anything is sent.
	for _, bad := range [][]string{{"--allow-once", "--reject"}, {"--option", "yes-please"}, {}} {
		sk, _ := w.owner.AppendHex(nil)
		cmd := exec.Command(testexe.Path(t), append([]string{"buzz", "approvals", "answer", "--request", req.ID}, bad...)...)
		cmd.Env = append(os.Environ(), "BUZZ_RELAY_URL="+w.relay.URL(), "BUZZ_PRIVATE_KEY="+string(sk))
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "option") {
			t.Errorf("buzz approvals answer %v: %v\n%s; want a refusal naming the options", bad, err, out)
		}
	}
	buzzAs(t, w, w.owner, false, "approvals", "answer", "--request", req.ID, "--allow-once")
	waitFor(t, "the allowed command to run", 30*time.Second, func() bool { return ran(a) })
	waitFor(t, "the request to leave the list", 15*time.Second, func() bool {
		return strings.TrimSpace(buzzAs(t, w, w.owner, false, "approvals", "list", "--channel", w.channel)) == "[]"
	})

	// A plain member's allow is ignored; the owner's reject is the answer.
	b := w.mention("touch it again")
	req = waitApproval(t, w, b)
	buzzAs(t, w, w.stranger, false, "approvals", "answer", "--request", req.ID, "--allow-once")
	time.Sleep(2 * time.Second)
	if ran(b) {
		t.Fatal("a plain member's allow ran the command")
	}
	buzzAs(t, w, w.owner, false, "approvals", "answer", "--request", req.ID, "--reject")
	w.awaitEvent(t, "the agent's closing deny", 30*time.Second, nostr.Filter{Kinds: []int{workspace.KindApprovalDeny},
		Authors: []string{w.agent.Public().Hex()}, Tags: nostr.TagMap{"e": {req.ID}}}, nil)
	waitFor(t, "the model to hear of the rejection", 30*time.Second, func() bool {
		for _, body := range llm.Bodies() {
			if strings.Contains(string(body), `Not run: the command \"touch approved-`+b.ID[:12]) {
				return true
			}
		}
		return false
	})
	if ran(b) {
		t.Fatal("the rejected command ran")
	}
	stop()

	// Nobody answers: rejected after the timeout, with a notice.
	w.runHarness(t, env, timing{}, "--approval-timeout", "2")
	c := w.mention("touch it a third time")
	waitApproval(t, w, c)
	w.awaitAgentReply(t, "the timeout notice", 30*time.Second, c.ID, func(ev *nostr.Event) bool {
		return strings.Contains(ev.Content, "nobody answered") && strings.Contains(ev.Content, "2 seconds")
	})
	waitFor(t, "the model to hear of the rejection", 30*time.Second, func() bool {
		for _, body := range llm.Bodies() {
			if strings.Contains(string(body), `Not run: the command \"touch approved-`+c.ID[:12]) {
				return true
			}
		}
		return false
	})
	if ran(c) {
		t.Fatal("the unanswered command ran")
	}
}
