package web_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestApprovalModule runs testdata/approval.mjs: a permission request's
// state comes from the agent's own closing answer only (a member's grant
// changes nothing), the owner and channel admins may answer and a plain
// member may not, and a workflow step's request is no permission request.
func TestApprovalModule(t *testing.T) {
	node, err := exec.LookPath("node") // the module needs no npm packages
	if err != nil {
		t.Skip("SKIP(loud): node is not installed; the approval module is not checked outside a browser")
	}
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	out, err := exec.Command(node, filepath.Join("testdata", "approval.mjs"), dir).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("approval.mjs: %v\n%s", err, out)
	}
}
