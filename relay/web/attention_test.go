package web_test

import "testing"

// TestAttentionRules runs testdata/attention.mjs under node: who gets a
// notification for which message (alerts.js), the title with its count,
// the typing gate's rate (presence.js), what the store keeps of typing
// and presence (a reply ends its author's typing at once, a typing event
// in flight does not bring it back), the working line an answer ends,
// and the notification settings' events (prefs.js).
func TestAttentionRules(t *testing.T) { nodeChecks(t, "attention.mjs", 40) }
