package relay

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
)

// TestBuzzCLI drives the relay with the buzz CLI of this same binary, over
// the HTTP bridge it finds in the NIP-11 document, as agents do.
func TestBuzzCLI(t *testing.T) {
	owner, alice := newKey(t), newKey(t)
	r := startRelay(t, Config{Owner: owner.pk, Allow: []string{alice.pk}})
	buzz := testexe.Link(t, "buzz")
	run := func(k testKey, args ...string) (string, string, error) {
		t.Helper()
		cmd := exec.CommandContext(testCtx(t), buzz, args...)
		cmd.Env = []string{"BUZZ_RELAY_URL=" + r.HTTPURL(), "BUZZ_PRIVATE_KEY=" + k.sk}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	must := func(k testKey, args ...string) string {
		t.Helper()
		out, stderr, err := run(k, args...)
		if err != nil {
			t.Fatalf("buzz %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return out
	}
	var created struct {
		ChannelID string `json:"channel_id"`
	}
	json.Unmarshal([]byte(must(owner, "channels", "create", "--name", "eng", "--type", "stream", "--visibility", "private")), &created)
	if !workspace.IsChannelID(created.ChannelID) {
		t.Fatalf("channels create gave channel_id %q", created.ChannelID)
	}
	ch := created.ChannelID
	must(owner, "messages", "send", "--channel", ch, "--content", "hello relay")
	if out := must(owner, "messages", "get", "--channel", ch); !strings.Contains(out, "hello relay") {
		t.Errorf("messages get = %s", out)
	}
	// alice is a relay member outside the private channel.
	if out, _, err := run(alice, "messages", "send", "--channel", ch, "--content", "let me in"); err == nil {
		t.Errorf("non-member send succeeded: %s", out)
	}
	if out := must(alice, "messages", "get", "--channel", ch); strings.Contains(out, "hello relay") {
		t.Errorf("non-member read a private channel: %s", out)
	}
	must(owner, "channels", "add-member", "--channel", ch, "--pubkey", alice.pk)
	if out := must(owner, "channels", "members", "--channel", ch); !strings.Contains(out, alice.pk) {
		t.Errorf("channels members = %s", out)
	}
	must(alice, "messages", "send", "--channel", ch, "--content", "thanks")
	if out := must(alice, "channels", "list", "--member"); !strings.Contains(out, ch) {
		t.Errorf("channels list --member = %s", out)
	}
	// Ephemeral presence goes over the websocket with NIP-42.
	must(alice, "users", "set-presence", "--status", "online")
}
