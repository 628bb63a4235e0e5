package web_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoModule runs testdata/repo.mjs: a pull request's state follows
// its newest status and update, comments are filed once under the pull
// request they name, the repository comes only from the relay's address
// form, and diffs split into files with their counts; the repository
// view takes only the relay's announcements and names signatures plainly.
func TestRepoModule(t *testing.T) {
	node, err := exec.LookPath("node") // the module needs no npm packages
	if err != nil {
		t.Skip("SKIP(loud): node is not installed; the pull request module is not checked outside a browser")
	}
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	out, err := exec.Command(node, filepath.Join("testdata", "repo.mjs"), dir).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("repo.mjs: %v\n%s", err, out)
	}
}

// TestPRLinesModule runs testdata/prlines.mjs: diff lines numbered in the
// new file, comments threaded by file and line (replies however deep),
// resolve marks newest first and apart from replies.
func TestPRLinesModule(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP(loud): node is not installed; the line comment module is not checked outside a browser")
	}
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	out, err := exec.Command(node, filepath.Join("testdata", "prlines.mjs"), dir).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("prlines.mjs: %v\n%s", err, out)
	}
}
