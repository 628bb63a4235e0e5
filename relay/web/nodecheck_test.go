package web_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
)

// nodeChecks runs testdata/script under node with the page's js directory
// as its argument; the script prints {checked, failures}. Each failure is
// a test error, and fewer than min checks means the script stopped early.
func nodeChecks(t *testing.T, script string, min int) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("SKIP(loud): node is not installed; %s is not run", script)
	}
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	cmd := exec.Command(node, filepath.Join("testdata", script), dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	var out struct {
		Checked  int      `json:"checked"`
		Failures []string `json:"failures"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s output %q: %v", script, b, err)
	}
	if out.Checked < min {
		t.Errorf("%s checked %d rules; want every one run (%d)", script, out.Checked, min)
	}
	for _, f := range out.Failures {
		t.Error(f)
	}
}

// TestAgentsModule runs testdata/agents.mjs: the agents panel's rows
// (who is an agent, its state from its harness's presence with model and
// usage, channels, running turns and last error, who may pause it and
// who may add it to the open channel).
func TestAgentsModule(t *testing.T) { nodeChecks(t, "agents.mjs", 20) }

// TestFindModules runs testdata/find.mjs: the search view's highlighting,
// snippets and grouping by channel (search.js), the inbox's items, why
// and unread order (inbox.js), and direct messages' names, people and
// templates (dm.js).
func TestFindModules(t *testing.T) { nodeChecks(t, "find.mjs", 16) }

// TestGuideModule runs testdata/guide.mjs: the first-run guide's steps
// (a channel of one's own, someone else in one, an agent mentioned), where
// its invite and mention go, and an empty channel's opening lines.
func TestGuideModule(t *testing.T) { nodeChecks(t, "guide.mjs", 16) }

// TestHistoryModule runs testdata/history.mjs: the feed's window
// (history.js FeedWindow) slides up and down a channel within its bound,
// waits for a page asked of the relay, stays put as pages come above and
// live messages below, and reaches the first new message.
func TestHistoryModule(t *testing.T) { nodeChecks(t, "history.mjs", 27) }

// TestOutboxModule runs testdata/outbox.mjs: what the person writes
// (outbox.js) is kept in storage across a reload, sent as the same signed
// event every time and never twice at once, dropped once the relay takes
// it, kept as failed with the relay's reason when refused, sent again by
// Retry now (which reconnects) and after a rate limit by itself, and
// refused past its bound with a reason.
func TestOutboxModule(t *testing.T) { nodeChecks(t, "outbox.mjs", 32) }

// TestWorkflowsModule runs testdata/workflows.mjs: the workflows panel's
// model (workflows.js): a definition's name and trigger read without a
// YAML parser, a run record read defensively, who may approve a waiting
// step and cancel a run, a refusal's line and column and where they are
// in the text, durations, and the answer's d tag.
func TestWorkflowsModule(t *testing.T) { nodeChecks(t, "workflows.mjs", 26) }
