package workflow

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary text to Parse: it never panics; a refusal is
// an *Error whose line and column lie within the text; a definition it
// takes has 1 to MaxSteps steps with distinct ids, each step a known
// action, and a trigger it knows.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"name: x\ntrigger: {on: manual}\nsteps:\n  - {action: send_message, text: hi}\n",
		"name: d\ntrigger:\n  on: message_posted\n  pattern: \"^deploy\"\nsteps:\n  - id: gate\n    action: request_approval\n    from: [owner, admins]\n    message: ok?\n    timeout: 30m\n  - id: go\n    if: \"{{steps.gate.status}} == approved\"\n    action: send_message\n    text: \"{{steps.gate.output}}\"\n",
		"name: s\ntrigger: {on: schedule, cron: \"*/5 * * * * *\", timezone: Europe/Berlin}\nsteps:\n  - {action: set_channel_topic, topic: \"{{trigger.time}}\"}\n",
		"trigger: {on: reaction_added, emoji: [\"🚀\", \"+\"]}\nsteps:\n  - {action: call_webhook, url: \"https://x.example/{{trigger.target}}\", method: GET}\n",
		"name: x\n trigger: [\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		d, err := Parse(text)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse error %T %v; want *Error", err, err)
			}
			// YAML breaks lines at \r and \r\n too (and, in 1.1, at NEL, LS, PS).
			breaks := strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n").Replace(text)
			if lines := strings.Count(breaks, "\n") + 1; e.Line < 0 || e.Line > lines+1 || e.Column < 0 {
				t.Fatalf("error at line %d, column %d of a %d-line text: %v", e.Line, e.Column, lines, err)
			}
			return
		}
		if len(d.Steps) == 0 || len(d.Steps) > MaxSteps {
			t.Fatalf("%d steps taken", len(d.Steps))
		}
		known := map[string]bool{OnMessage: true, OnReaction: true, OnSchedule: true, OnWebhook: true, OnManual: true}
		if !known[d.Trigger.On] || (d.Trigger.On == OnSchedule) != (d.Trigger.Cron != nil) {
			t.Fatalf("trigger %+v taken", d.Trigger)
		}
		ids := map[string]bool{}
		for _, s := range d.Steps {
			if ids[s.ID] {
				t.Fatalf("step id %q twice", s.ID)
			}
			ids[s.ID] = true
			found := false
			for _, a := range actions {
				found = found || a == s.Action
			}
			if !found {
				t.Fatalf("step %q has action %q", s.ID, s.Action)
			}
		}
		if d.Timeout <= 0 || d.Timeout > MaxRunTimeout {
			t.Fatalf("run timeout %s", d.Timeout)
		}
	})
}

// FuzzParseCron: a cron expression ParseCron takes yields a next time
// after the one given, and Next never panics or loops forever.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"0 9 * * 1-5", "*/2 * * * * *", "59 23 31 12 *", "0 0 29 2 *", "61 * * * *", "* * * *"} {
		f.Add(s)
	}
	from := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := ParseCron(expr)
		if err != nil {
			return
		}
		if n := c.Next(from); !n.IsZero() && !n.After(from) {
			t.Fatalf("ParseCron(%q).Next(%s) = %s; want later", expr, from, n)
		}
	})
}
