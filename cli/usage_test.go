package cli

import (
	"strings"
	"testing"
)

// TestCommandUsageNamesItsFlags keeps each command's usage line and its
// flag table in step: --help shows both, and a flag in one but not the
// other is a flag people are told about wrongly.
func TestCommandUsageNamesItsFlags(t *testing.T) {
	for _, c := range commands() {
		inUsage := map[string]bool{}
		for _, w := range strings.FieldsFunc(c.Usage, func(r rune) bool {
			return r == ' ' || r == '[' || r == ']' || r == '|' || r == '…' || r == '(' || r == ')'
		}) {
			if name, ok := strings.CutPrefix(w, "--"); ok {
				inUsage[name] = true
			}
		}
		inTable := map[string]bool{}
		for _, f := range c.Flags {
			inTable[f.Name] = true
			if !inUsage[f.Name] && !strings.Contains(f.Help, "not supported") { // a flag kept for upstream scripts, refused when used
				t.Errorf("buzz %s: flag --%s is in the table but not in the usage line %q", c.path(), f.Name, c.Usage)
			}
		}
		for name := range inUsage {
			if !inTable[name] && !isGlobal(name) {
				t.Errorf("buzz %s: usage line names --%s, which the command does not take", c.path(), name)
			}
		}
	}
}
