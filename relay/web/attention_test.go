package web_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestAttentionRules runs testdata/attention.mjs under node: who gets a
// notification for which message (alerts.js), the title with its count,
// the typing gate's rate (presence.js), what the store keeps of typing
// and presence (a reply ends its author's typing at once, a typing event
// in flight does not bring it back), the working line an answer ends,
// and the notification settings' events (prefs.js).
func TestAttentionRules(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP(loud): node is not installed; the page's attention rules are not checked")
	}
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	cmd := exec.Command(node, filepath.Join("testdata", "attention.mjs"), dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node attention.mjs: %v\n%s", err, stderr.String())
	}
	var out struct {
		Checked  int      `json:"checked"`
		Failures []string `json:"failures"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("attention.mjs output %q: %v", b, err)
	}
	if out.Checked < 40 {
		t.Errorf("checked %d rules; want every one run", out.Checked)
	}
	for _, f := range out.Failures {
		t.Error(f)
	}
}
