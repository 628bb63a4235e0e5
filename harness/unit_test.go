package harness

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

func TestMemoryDTag(t *testing.T) {
	agent, _ := nostrkey.ParseSecret(strings.Repeat("0", 63) + "1")
	owner, _ := nostrkey.ParseSecret(strings.Repeat("0", 63) + "2")
	key, err := conversationKey(agent, owner.Public().Hex())
	if err != nil {
		t.Fatal(err)
	}
	const want = "bdc233238ffe52e272b44cc233c8f33a2bc510b08be04495b225964283be4a90"
	if got := workspace.MemoryDTag(key, workspace.MemoryCoreSlug); got != want {
		t.Errorf("workspace.MemoryDTag(core) = %s; want %s", got, want)
	}
}

func mkEvent(id string, kind int, content string, tags ...nostr.Tag) *Event {
	e := &Event{Channel: "c0ffee00-0000-4000-8000-000000000001", Tag: "@mention"}
	e.ID = strings.Repeat(id, 64/len(id))
	e.PubKey = strings.Repeat("a", 64)
	e.Kind = kind
	e.Content = content
	e.Tags = append(nostr.Tags{{"h", e.Channel}}, tags...)
	return e
}

func TestFormatPrompt(t *testing.T) {
	ch := channelInfo{ID: "c0ffee00-0000-4000-8000-000000000001", Name: "general", Type: "stream"}
	root := strings.Repeat("b", 64)
	e1, e2, e3 := mkEvent("1", 9, "one"), mkEvent("2", 9, "two"), mkEvent("3", 9, "three")
	e2.CreatedAt, e3.CreatedAt = 2, 3
	join := func(in *promptInput) string {
		var parts []string
		for _, b := range formatPrompt(in) {
			parts = append(parts, b.Text)
		}
		return strings.Join(parts, "\n")
	}
	p := join(&promptInput{Batch: []*Event{e1, e2, e3}, Channel: ch, Agent: "x"})
	if !strings.Contains(p, "[Buzz events — 3 events]") || strings.Index(p, "--- Event 1 (@mention) ---") > strings.Index(p, "--- Event 3") {
		t.Errorf("batch prompt:\n%s", p)
	}
	steer := join(&promptInput{Batch: []*Event{e3}, Parked: []*Event{e1}, Reason: "steer", Channel: ch})
	for _, want := range []string{"[What you were working on]", "[New message — arrived while you were working]"} {
		if !strings.Contains(steer, want) {
			t.Errorf("steer prompt lacks %q", want)
		}
	}
	intr := join(&promptInput{Batch: []*Event{e3}, Parked: []*Event{e1}, Reason: "interrupt", Channel: ch})
	for _, want := range []string{"[Previous request — interrupted before completion]", "[New request — supersedes previous]"} {
		if !strings.Contains(intr, want) {
			t.Errorf("interrupt prompt lacks %q", want)
		}
	}
	threaded := mkEvent("4", 9, "in thread", nostr.Tag{"e", root, "", "reply"})
	p = join(&promptInput{Batch: []*Event{threaded}, Channel: ch, Agent: "x"})
	for _, want := range []string{"Scope: thread", "Thread root: " + root, "--reply-to " + root, "Parsed: parent=" + root + ", root=" + root} {
		if !strings.Contains(p, want) {
			t.Errorf("thread prompt lacks %q:\n%s", want, p)
		}
	}
	// Agent to agent: no reply anchor.
	agentProfiles := map[string]*profile{strings.Repeat("a", 64): {Label: "Bot", Agent: true}}
	p = join(&promptInput{Batch: []*Event{mkEvent("5", 9, "hi")}, Channel: ch, Agent: "x", Profiles: agentProfiles})
	if strings.Contains(p, "--reply-to") {
		t.Errorf("agent-to-agent prompt has a reply anchor:\n%s", p)
	}
	// Slash command first.
	slash := mkEvent("6", 9, "@Eva /goal ship it")
	blocks := formatPrompt(&promptInput{Batch: []*Event{slash}, Channel: ch, Profiles: map[string]*profile{"e": {Label: "Eva"}}})
	if blocks[0].Text != "/goal ship it" {
		t.Errorf("first block = %q; want /goal ship it", blocks[0].Text)
	}
	for _, c := range []string{"@ /x", "hi /goal", "/"} {
		if got := slashCommand(c, nil); got != "" {
			t.Errorf("slashCommand(%q) = %q; want none", c, got)
		}
	}
}

func TestSystemSections(t *testing.T) {
	p := systemParts{Cwd: "/work", Base: "base\n\n", Persona: "me", Team: "team", Memory: memoryHeader + "\nx", Canvas: "[Channel Canvas]\ny"}
	got := p.text()
	order := []string{"[Workspace]", "[Base]\nbase\n\n[System]", "[System]\nme", "[Team Instructions]\nteam", memoryHeader, "[Channel Canvas]"}
	last := -1
	for _, o := range order {
		i := strings.Index(got, o)
		if i <= last {
			t.Fatalf("section %q out of order in:\n%s", o, got)
		}
		last = i
	}
	if s := (systemParts{Cwd: "/", Base: "b"}).text(); strings.Contains(s, "[Workspace]") {
		t.Errorf("cwd / got a workspace section")
	}
	if s := (systemParts{Cwd: "/w"}).text(); strings.Contains(s, "[Workspace]") {
		t.Errorf("no base prompt but a workspace section")
	}
	if got := sessionTitle("A B C", channelInfo{Name: "general", Type: "stream"}); got != "A B C · #general" {
		t.Errorf("sessionTitle = %q", got)
	}
	if got := sessionTitle("A B C", channelInfo{Name: "d", Type: "dm"}); got != "A B C" {
		t.Errorf("dm sessionTitle = %q", got)
	}
}

func TestBasePromptCoversSummary(t *testing.T) {
	for _, want := range []string{"sessions", "`buzz`", "BUZZ_RELAY_URL", "--content -", "buzz://", `"$BUZZ_CLI"`,
		"--mention", "silence", "AGENTS.md", "RESEARCH/", "PLANS/", "GUIDES/", "WORK_LOGS/", "OUTBOX/", "REPOS/", ".scratch/",
		"ALL_CAPS_WITH_UNDERSCORES", "$HOME", "65 535", "mem/<topic>", "test suite", "worktree", "user.email", "safest"} {
		if !strings.Contains(builtinBasePrompt, want) {
			t.Errorf("base prompt lacks %q", want)
		}
	}
}

func TestIDSetGenerations(t *testing.T) {
	ids := newIDSet(2)
	for _, id := range []string{"a", "b", "c"} {
		if !ids.Add(id) {
			t.Errorf("add(%s) not new", id)
		}
	}
	if ids.Add("a") || ids.Add("c") {
		t.Errorf("two generations forgot an id too early")
	}
}

func TestChannelFilter(t *testing.T) {
	const ch = "c0ffee00-0000-4000-8000-000000000001"
	mk := func(args ...string) *harness {
		cfg, err := LoadConfig(args, testEnv())
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{cfg: cfg}
		h.matcher = newRuleMatcher(h.rules(), cfg.AgentHex)
		return h
	}
	h := mk()
	f, _ := h.channelFilter(ch)
	since := nostr.Timestamp(995) // a floor of 1000, less the relay client's skew
	f.Since = &since
	b, _ := json.Marshal([]any{"REQ", "ch-" + ch, f})
	var got, want any
	json.Unmarshal(b, &got)
	json.Unmarshal([]byte(`["REQ","ch-`+ch+`",{"kinds":[9,46010,40007],"#h":["`+ch+`"],"#p":["`+h.cfg.AgentHex+`"],"since":995}]`), &want)
	if gb, _ := json.Marshal(got); string(gb) != mustJSON(want) {
		t.Errorf("REQ = %s; want %s", gb, mustJSON(want))
	}
	if f, _ := mk("--no-mention-filter").channelFilter(ch); f.Tags["p"] != nil {
		t.Errorf("--no-mention-filter kept #p")
	}
	if f, _ := mk("--follow-threads").channelFilter(ch); f.Tags["p"] != nil {
		t.Errorf("--follow-threads kept #p: replies without a mention would never arrive")
	}
	if f, _ := mk("--subscribe", "all").channelFilter(ch); f.Kinds != nil {
		t.Errorf("--subscribe all kinds = %v", f.Kinds)
	}
	rules := t.TempDir() + "/r.toml"
	writeFile(t, rules, "[[rules]]\nname=\"a\"\nchannels=\"all\"\nkinds=[9]\nrequire_mention=true\n[[rules]]\nname=\"b\"\nchannels=[\""+ch+"\"]\nkinds=[]\nrequire_mention=true\n")
	f, _ = mk("--subscribe", "config", "--config", rules).channelFilter(ch)
	if f.Kinds != nil || f.Tags["p"] == nil {
		t.Errorf("config merge = kinds %v p %v; want wildcard with #p", f.Kinds, f.Tags["p"])
	}
	writeFile(t, rules, "[[rules]]\nname=\"a\"\nchannels=\"all\"\nkinds=[9]\nrequire_mention=true\n[[rules]]\nname=\"b\"\nchannels=\"all\"\nkinds=[9]\n")
	f, _ = mk("--subscribe", "config", "--config", rules).channelFilter(ch)
	if f.Tags["p"] != nil {
		t.Errorf("#p kept although one rule needs no mention")
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
