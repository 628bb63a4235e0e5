package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
	"buzzbox/relay"

	"github.com/nbd-wtf/go-nostr"
)

// bridgeClient is this package's client, in-process, talking to base as k:
// the tests publish workflow definitions (no command writes them) and read
// back exactly what the CLI stored.
func bridgeClient(t *testing.T, base string, k testKey) *relayclient.Client {
	t.Helper()
	s, err := nostrkey.ParseSecret(k.sk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Zero)
	c := newClient(proc.Env{}, &parsed{vals: map[string][]string{"relay": {base}}}, s, nil)
	t.Cleanup(c.Close)
	return c
}

// stored fetches the event the CLI reported writing.
func stored(t *testing.T, c *relayclient.Client, res relayclient.Result) *nostr.Event {
	t.Helper()
	if !res.Accepted || !nostrkey.IsLowerHex(res.EventID, 64) {
		t.Fatalf("write result = %+v; want an accepted event id", res)
	}
	evs, err := c.Query(t.Context(), nostr.Filter{IDs: []string{res.EventID}, Limit: 1})
	if err != nil || len(evs) != 1 {
		t.Fatalf("event %s on the relay: %v, %v", res.EventID, evs, err)
	}
	return evs[0]
}

// tokenHash is the d tag an approval must carry, computed here rather
// than with the package's own helper.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// TestWorkflowsAgainstBuzzRelay runs list, get, trigger and approve against
// buzz-relay and checks the events as the relay stored them.
//
// buzz-relay (khatru) stores kinds 10000 and up outside 30000–39999 as
// replaceable: one event per author and kind, and of two in the same
// second the one with the higher id is dropped though acknowledged. So
// every second write of a kind here comes from its own key.
func TestWorkflowsAgainstBuzzRelay(t *testing.T) {
	me, second, checker := newKey(t), newKey(t), newKey(t)
	r, err := relay.Start(relay.Config{DataDir: t.TempDir(), Owner: me.pk, Allow: []string{second.pk, checker.pk}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	w := &testSpace{r: &plainRelay{base: r.HTTPURL()}, me: me}
	c := bridgeClient(t, r.HTTPURL(), me)
	as := func(t *testing.T, k testKey, v any, args ...string) {
		t.Helper()
		res := runBuzz(t, r.HTTPURL(), k, "", args...)
		if res.code != 0 || json.Unmarshal([]byte(res.stdout), v) != nil {
			t.Fatalf("buzz %v as %s: exit %d, stdout %q, stderr %s", args, k.pk, res.code, res.stdout, res.stderr)
		}
	}

	channel := func(name string) string {
		var created struct {
			ChannelID string `json:"channel_id"`
		}
		w.ok(t, &created, "", "channels", "create", "--name", name, "--type", "stream", "--visibility", "open")
		return created.ChannelID
	}
	ops, other := channel("ops"), channel("other")
	const (
		deploy  = "0b6f3c1e-5a2d-4e8f-9c71-3d4a5b6c7d8e"
		backup  = "1c7a4d2f-6b3e-4f90-8d82-4e5b6c7d8e9f"
		foreign = "2d8b5e3a-7c4f-4a01-9e93-5f6c7d8e9fa0"
		missing = "3e9c6f4b-8d5a-4b12-8fa4-6a7d8e9fa0b1"
	)
	now := time.Now().Unix()
	defs := []*nostr.Event{
		signed(t, me, workspace.KindWorkflowDef, "name: deploy\ntrigger: {on: manual}\nsteps:\n  - {id: say, action: send_message, text: \"deploying {{trigger.inputs.version}}\"}\n", nostr.Tags{{"d", deploy}, {"h", ops}}, now-20),
		signed(t, me, workspace.KindWorkflowDef, "name: backup\ntrigger: {on: manual}\nsteps:\n  - {action: send_message, text: hi}\n", nostr.Tags{{"d", backup}, {"h", ops}}, now-10),
		signed(t, me, workspace.KindWorkflowDef, "name: elsewhere\ntrigger: {on: manual}\nsteps:\n  - {action: send_message, text: hi}\n", nostr.Tags{{"d", foreign}, {"h", other}}, now),
	}
	for _, ev := range defs {
		if res, err := c.Publish(t.Context(), ev); err != nil || !res.Accepted {
			t.Fatalf("publish workflow %s: %+v %v", tagValue(ev, "d"), res, err)
		}
	}
	want := func(ev *nostr.Event) workflowInfo {
		return workflowInfo{WorkflowID: tagValue(ev, "d"), Content: ev.Content, CreatedAt: int64(ev.CreatedAt), Pubkey: me.pk}
	}

	t.Run("list", func(t *testing.T) {
		var got []workflowInfo
		w.ok(t, &got, "", "workflows", "list", "--channel", ops)
		if len(got) != 2 || got[0] != want(defs[1]) || got[1] != want(defs[0]) {
			t.Fatalf("workflows list = %+v; want backup then deploy", got)
		}
		empty := channel("empty")
		if res := w.run(t, "", "workflows", "list", "--channel", empty); res.code != 0 || res.stdout != "[]\n" {
			t.Fatalf("empty channel: exit %d, stdout %q; want []", res.code, res.stdout)
		}
	})
	t.Run("get", func(t *testing.T) {
		var got *workflowInfo
		w.ok(t, &got, "", "workflows", "get", "--workflow", strings.ToUpper(deploy))
		if got == nil || *got != want(defs[0]) {
			t.Fatalf("workflows get = %+v; want %+v", got, want(defs[0]))
		}
		if res := w.run(t, "", "workflows", "get", "--workflow", missing); res.code != 0 || res.stdout != "null\n" {
			t.Fatalf("unknown workflow: exit %d, stdout %q; want null", res.code, res.stdout)
		}
	})
	t.Run("trigger", func(t *testing.T) {
		var bare relayclient.Result
		w.ok(t, &bare, "", "workflows", "trigger", "--workflow", deploy)
		ev := stored(t, c, bare)
		if rest, ok := unpressed(ev.Tags); ev.Kind != workspace.KindWorkflowTrigger || ev.Content != "" || !ok || !tagsEqual(rest, nostr.Tags{{"d", deploy}}) {
			t.Fatalf("trigger = kind %d, content %q, tags %v; want 46020, empty, d and a press", ev.Kind, ev.Content, ev.Tags)
		}
		var with relayclient.Result
		as(t, second, &with, "workflows", "trigger", "--workflow", deploy,
			"--inputs", "{\n  \"version\": \"1.4.0\", \"dry_run\": false,\n  \"n\": 12345678901234567890, \"tags\": [\"a\", \"<b>\"]\n}")
		ev = stored(t, c, with)
		const compact = `{"dry_run":false,"n":12345678901234567890,"tags":["a","<b>"],"version":"1.4.0"}`
		if rest, ok := unpressed(ev.Tags); ev.Kind != workspace.KindWorkflowTrigger || ev.Content != compact || !ok || !tagsEqual(rest, nostr.Tags{{"d", deploy}}) {
			t.Fatalf("trigger --inputs = kind %d, content %q, tags %v; want content %s", ev.Kind, ev.Content, ev.Tags, compact)
		}
	})
	t.Run("approve", func(t *testing.T) {
		const token = "7f3e2d1c-0b9a-4876-a543-210fedcba987"
		var grant relayclient.Result
		w.ok(t, &grant, "", "workflows", "approve", "--token", token, "--note", "looks right")
		ev := stored(t, c, grant)
		if ev.Kind != workspace.KindApprovalGrant || ev.Content != "looks right" || !tagsEqual(ev.Tags, nostr.Tags{{"d", tokenHash(token)}}) {
			t.Fatalf("approve = kind %d, content %q, tags %v; want 46030 with d = sha256(token)", ev.Kind, ev.Content, ev.Tags)
		}
		// Denial, with the token upper-cased: it is hashed as given.
		upper := strings.ToUpper(token)
		var deny relayclient.Result
		w.ok(t, &deny, "", "workflows", "approve", "--token", upper, "--approved", "false")
		ev = stored(t, c, deny)
		if ev.Kind != workspace.KindApprovalDeny || ev.Content != "" || !tagsEqual(ev.Tags, nostr.Tags{{"d", tokenHash(upper)}}) {
			t.Fatalf("deny = kind %d, content %q, tags %v; want 46031, empty, d = sha256(token as given)", ev.Kind, ev.Content, ev.Tags)
		}
		var explicit relayclient.Result
		as(t, second, &explicit, "workflows", "approve", "--token", token, "--approved=true")
		if ev = stored(t, c, explicit); ev.Kind != workspace.KindApprovalGrant {
			t.Fatalf("--approved=true gave kind %d", ev.Kind)
		}
	})
	t.Run("refused", func(t *testing.T) {
		cases := []struct {
			name string
			args []string
			msg  string
		}{
			{"list bad channel", []string{"workflows", "list", "--channel", "ops"}, "invalid UUID"},
			{"get bad uuid", []string{"workflows", "get", "--workflow", "not-a-uuid"}, "invalid UUID"},
			{"get no workflow", []string{"workflows", "get"}, "--workflow is required"},
			{"trigger bad uuid", []string{"workflows", "trigger", "--workflow", deploy + "0"}, "invalid UUID"},
			{"inputs array", []string{"workflows", "trigger", "--workflow", deploy, "--inputs", "[1]"}, "--inputs must be a JSON object"},
			{"inputs null", []string{"workflows", "trigger", "--workflow", deploy, "--inputs", "null"}, "--inputs must be a JSON object"},
			{"inputs broken", []string{"workflows", "trigger", "--workflow", deploy, "--inputs", `{"a":`}, "--inputs is not valid JSON: "},
			{"inputs trailing", []string{"workflows", "trigger", "--workflow", deploy, "--inputs", `{} {}`}, "--inputs is not valid JSON: "},
			{"approve bad token", []string{"workflows", "approve", "--token", "token-1"}, "invalid UUID"},
			{"approve no token", []string{"workflows", "approve", "--approved", "false"}, "--token is required"},
			{"approved yes", []string{"workflows", "approve", "--token", missing, "--approved", "yes"}, "--approved must be true or false"},
			{"approved empty", []string{"workflows", "approve", "--token", missing, "--approved="}, "--approved must be true or false"},
			{"approved missing value", []string{"workflows", "approve", "--token", missing, "--approved"}, "--approved needs a value"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				res := runBuzz(t, r.HTTPURL(), checker, "", tc.args...)
				fails(t, res, 1, catUser)
				if !strings.Contains(res.stderr, tc.msg) {
					t.Fatalf("stderr %s; want it to say %q", res.stderr, tc.msg)
				}
			})
		}
		// checker wrote nothing else: any event of theirs came from a refused command.
		if evs, err := c.Query(t.Context(), nostr.Filter{Authors: []string{checker.pk}}); err != nil || len(evs) != 0 {
			t.Fatalf("refused commands published %d events (%v)", len(evs), err)
		}
	})
	t.Run("create", func(t *testing.T) {
		dir := t.TempDir()
		bad := filepath.Join(dir, "bad.yaml")
		os.WriteFile(bad, []byte("name: x\ntrigger:\n  on: sometimes\nsteps:\n  - {action: send_message, text: hi}\n"), 0o600)
		res := w.run(t, "", "workflows", "create", "--channel", ops, "--file", bad)
		if res.code == 0 || !strings.Contains(res.stderr, "workflow line 3, column 7: trigger.on: unknown trigger") {
			t.Fatalf("invalid definition: exit %d, stderr %s; want it refused naming line 3, column 7", res.code, res.stderr)
		}
		good := filepath.Join(dir, "good.yaml")
		os.WriteFile(good, []byte("name: y\ntrigger: {on: manual}\nsteps:\n  - {action: send_message, text: hi}\n"), 0o600)
		var ok relayclient.Result
		w.ok(t, &ok, "", "workflows", "create", "--channel", ops, "--file", good)
		if ev := stored(t, c, ok); ev.Kind != workspace.KindWorkflowDef || tagValue(ev, "h") != ops {
			t.Fatalf("create stored kind %d tags %v", ev.Kind, ev.Tags)
		}
	})
	t.Run("runs", func(t *testing.T) {
		// The trigger subtest ran deploy once: second's trigger is not
		// run, as second is no member of ops.
		var runs []struct {
			Status string
			Steps  []struct{ ID, Status, Output string }
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			w.ok(t, &runs, "", "workflows", "runs", "--workflow", deploy, "--limit", "5")
			done := 0
			for _, r := range runs {
				if r.Status == "succeeded" && len(r.Steps) == 1 && r.Steps[0].Status == "succeeded" {
					done++
				}
			}
			if done == 1 {
				break
			}
			if time.Now().After(deadline) {
				all, _ := c.Query(t.Context(), nostr.Filter{Kinds: []int{workspace.KindWorkflowRun}})
				for _, a := range all {
					t.Logf("run %v %s", a.Tags, a.Content)
				}
				t.Fatalf("runs = %+v; want one succeeded run of one step", runs)
			}
			time.Sleep(100 * time.Millisecond)
		}
		msgs, err := c.Query(t.Context(), nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": []string{ops}}})
		if err != nil {
			t.Fatal(err)
		}
		texts := map[string]bool{}
		for _, m := range msgs {
			texts[m.Content] = true
		}
		if !texts["deploying "] || len(msgs) != 1 {
			t.Fatalf("messages in ops %v; want the one run's message", texts)
		}
		fails(t, w.run(t, "", "workflows", "runs", "--workflow", "nope"), 1, catUser)
		fails(t, w.run(t, "", "workflows", "runs", "--workflow", deploy, "--limit", "-1"), 1, catUser)
	})
}

// unpressed is tags without the press tag a run by hand carries (one
// UUID), and whether it had exactly one.
func unpressed(tags nostr.Tags) (nostr.Tags, bool) {
	var rest nostr.Tags
	n := 0
	for _, tag := range tags {
		if len(tag) >= 2 && tag[0] == workspace.TagWorkflowPress {
			if u, err := parseUUID(tag[1]); err != nil || u != tag[1] {
				return nil, false
			}
			n++
			continue
		}
		rest = append(rest, tag)
	}
	return rest, n == 1
}

// TestWorkflowsRunAndRerun: `buzz workflows run` (the documented name of
// upstream's trigger) starts a run the relay executes; `--rerun RUN`
// starts a new run with that run's trigger values, recorded as a re-run;
// --rerun with --inputs, or a bad run id, is refused before anything is
// published.
func TestWorkflowsRunAndRerun(t *testing.T) {
	me, second := newKey(t), newKey(t)
	r, err := relay.Start(relay.Config{DataDir: t.TempDir(), Owner: me.pk, Allow: []string{second.pk}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	w := &testSpace{r: &plainRelay{base: r.HTTPURL()}, me: me}
	c := bridgeClient(t, r.HTTPURL(), me)
	var created struct {
		ChannelID string `json:"channel_id"`
	}
	w.ok(t, &created, "", "channels", "create", "--name", "ops", "--type", "stream", "--visibility", "open")
	ops := created.ChannelID
	var added relayclient.Result
	w.ok(t, &added, "", "channels", "add-member", "--channel", ops, "--pubkey", second.pk)
	const deploy = "4fad7051-9e6b-4c23-9ab5-7b8e9fa0b1c2"
	def := signed(t, me, workspace.KindWorkflowDef, "name: deploy\ntrigger: {on: manual}\nsteps:\n  - {id: say, action: send_message, text: \"deploying {{trigger.inputs.version}}\"}\n",
		nostr.Tags{{"d", deploy}, {"h", ops}}, time.Now().Unix())
	if res, err := c.Publish(t.Context(), def); err != nil || !res.Accepted {
		t.Fatalf("publish workflow: %+v %v", res, err)
	}
	runs := func(want int) []map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var got []map[string]any
			w.ok(t, &got, "", "workflows", "runs", "--workflow", deploy)
			done := 0
			for _, g := range got {
				if g["status"] == "succeeded" {
					done++
				}
			}
			if done == want && len(got) == want {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("runs = %v; want %d succeeded", got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var first relayclient.Result
	w.ok(t, &first, "", "workflows", "run", "--workflow", deploy, "--inputs", `{"version":"2.0"}`)
	got := runs(1)
	id, _ := got[0]["run"].(string)

	for _, bad := range [][]string{
		{"workflows", "run", "--workflow", deploy, "--rerun", id, "--inputs", "{}"},
		{"workflows", "run", "--workflow", deploy, "--rerun", "nope"},
	} {
		res := runBuzz(t, r.HTTPURL(), second, "", bad...)
		fails(t, res, 1, catUser)
		if !strings.Contains(res.stderr, "--rerun") {
			t.Errorf("buzz %v: stderr %s; want it to name --rerun", bad, res.stderr)
		}
	}
	var again relayclient.Result
	if res := runBuzz(t, r.HTTPURL(), second, "", "workflows", "run", "--workflow", deploy, "--rerun", strings.ToUpper(id)); res.code != 0 || json.Unmarshal([]byte(res.stdout), &again) != nil {
		t.Fatalf("rerun: exit %d, stdout %q, stderr %s", res.code, res.stdout, res.stderr)
	}
	ev := stored(t, c, again)
	if rest, ok := unpressed(ev.Tags); !ok || !tagsEqual(rest, nostr.Tags{{"d", deploy}, {workspace.TagWorkflowRun, id}}) {
		t.Fatalf("rerun tags %v; want d, a press of its own and the run", ev.Tags)
	}
	got = runs(2)
	reruns := 0
	for _, g := range got {
		if g["rerun_of"] == id {
			reruns++
		}
	}
	msgs, err := c.Query(t.Context(), nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": []string{ops}}})
	if err != nil {
		t.Fatal(err)
	}
	if reruns != 1 || len(msgs) != 2 || msgs[0].Content != "deploying 2.0" || msgs[1].Content != "deploying 2.0" {
		t.Fatalf("%d re-runs of %s, messages %v; want one, and the inputs used twice", reruns, id, msgs)
	}
	// The same command twice within a second is two runs: each run by
	// hand is an event of its own (a press tag), not one id twice.
	for range 2 {
		w.ok(t, new(relayclient.Result), "", "workflows", "run", "--workflow", deploy, "--inputs", `{"version":"3.0"}`)
	}
	runs(4)
}
