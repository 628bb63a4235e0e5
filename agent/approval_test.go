package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApprovalRulesMatch: a rule's words match next to each other
// anywhere among the command's words, across operators and quotes; words
// elsewhere or apart do not.
func TestApprovalRulesMatch(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rules")
	os.WriteFile(file, []byte("# risky\ngit push\n\nrm -rf\ncurl * | sh\ndocker ?m\n"), 0o600)
	rules, err := loadApprovalRules(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 4 {
		t.Fatalf("%d rules; want 4", len(rules))
	}
	for _, tc := range []struct{ cmd, want string }{
		{"git push origin main", "git push"},
		{"cd repo && git push", "git push"},
		{`git "push" --force`, "git push"},
		{"echo $(git push)", "git push"},
		{"sudo rm -rf /tmp/x", "rm -rf"},
		{"docker rm c1", "docker ?m"},
		{"git status", ""},
		{"git log --grep push", ""},
		{"rm -r -f x", ""},
		{"echo git; echo push", ""},
	} {
		if got := matchRule(rules, tc.cmd); got != tc.want {
			t.Errorf("matchRule(%q) = %q; want %q", tc.cmd, got, tc.want)
		}
	}
}

// TestApprovalRulesFileBounds: a missing file, a bad pattern and a file
// over the limit are configuration errors naming the variable.
func TestApprovalRulesFileBounds(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("git [push\n"), 0o600)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, []byte(strings.Repeat("x", maxApprovalRuleBytes+1)), 0o600)
	for _, f := range []string{filepath.Join(dir, "missing"), bad, big} {
		if _, err := loadApprovalRules(f); err == nil || !strings.Contains(err.Error(), envApprovalRules) {
			t.Errorf("loadApprovalRules(%s) = %v; want an error naming %s", filepath.Base(f), err, envApprovalRules)
		}
	}
}
