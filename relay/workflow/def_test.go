package workflow

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseNamesLineAndColumn(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"name: x\ntrigger:\n  on: sometimes\nsteps: []\n", "line 3, column 7: trigger.on: unknown trigger"},
		{"name: x\ntrigger: {on: manual}\nsteps:\n  - id: a\n    action: send_message\n    txt: hi\n", "line 6, column 5: unknown field \"txt\""},
		{"name: x\ntrigger: {on: manual}\nsteps:\n  - action: send_message\n    text: \"{{steps.later.output}}\"\n", "line 5, column 11: {{steps.later.output}}: no earlier step"},
		{"name: x\ntrigger:\n  on: schedule\n  cron: \"61 * * * *\"\nsteps:\n  - {action: send_message, text: hi}\n", "line 4, column 9: trigger.cron"},
		{"name: x\n trigger: [\n", "line 2"},
		{"name: x\ntrigger:\n  on: reaction_added\n  pattern: go\nsteps:\n  - {action: send_message, text: hi}\n", "line 4, column 12: trigger: pattern does not apply to on: reaction_added"},
		{"name: x\ntrigger:\n  on: reaction_added\n  emoji: [\"\"]\nsteps:\n  - {action: send_message, text: hi}\n", "line 4, column 11: trigger.emoji: want a reaction"},
	}
	for _, c := range cases {
		_, err := Parse(c.yaml)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.yaml, err, c.want)
		}
	}
}

func TestParseDeploy(t *testing.T) {
	d, err := Parse(`name: deploy
trigger:
  on: message_posted
  pattern: "^deploy (\\S+)$"
steps:
  - id: gate
    action: request_approval
    from: [owner, admins]
    message: "Deploy {{trigger.text}}?"
    timeout: 30m
  - id: go
    if: "{{steps.gate.status}} == approved"
    action: send_message
    text: "deploying"
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Steps) != 2 || d.Steps[0].Timeout != 30*time.Minute || !d.Steps[1].If.Holds(Values{"steps.gate.status": "approved"}) || d.Steps[1].If.Holds(Values{"steps.gate.status": "denied"}) {
		t.Fatalf("parsed %+v", d)
	}
}

func TestCronNextInZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	c, err := ParseCron("0 9 * * 1-5")
	if err != nil {
		t.Fatal(err)
	}
	// Friday 2026-12-04 10:00 Berlin: next is Monday 09:00 Berlin.
	got := c.Next(time.Date(2026, 12, 4, 10, 0, 0, 0, berlin))
	if want := time.Date(2026, 12, 7, 9, 0, 0, 0, berlin); !got.Equal(want) {
		t.Fatalf("next = %s, want %s", got, want)
	}
	s, _ := ParseCron("*/2 * * * * *")
	if got := s.Next(time.Date(2026, 1, 1, 0, 0, 1, 500, time.UTC)); got.Second() != 2 {
		t.Fatalf("seconds cron next = %s", got)
	}
	if _, err := ParseCron("0 0 30 2 *"); err == nil {
		t.Fatal("Feb 30 accepted")
	}
}

// TestReadmeExamplesParse keeps the README's workflow examples valid.
func TestReadmeExamplesParse(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		text, _, _ := strings.Cut(block, "```")
		if !strings.Contains(text, "trigger:") {
			continue
		}
		text = strings.ReplaceAll(text, "<the agent's pubkey, hex>", strings.Repeat("ab", 32))
		if _, err := Parse(text); err != nil {
			t.Errorf("README example:\n%s\n%v", text, err)
		}
		n++
	}
	if n < 2 {
		t.Fatalf("%d workflow examples in the README; want 2", n)
	}
}
