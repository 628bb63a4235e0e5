package relay

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"buzzbox/internal/testexe"
)

// TestNostrToolsClient has nostr-tools, a client nobody here wrote, log in
// with NIP-42, publish, read back over the websocket, and read again
// through /query with its own NIP-98 token.
func TestNostrToolsClient(t *testing.T) {
	modules, node := testexe.NodeModules(t)
	args := []string{filepath.Join("testdata", "nostr_tools_client.mjs")}
	// Node 20 hides the WebSocket global behind a flag; later versions
	// have it by default and may not know the flag.
	if exec.Command(node, "--experimental-websocket", "-e", "0").Run() == nil {
		args = append([]string{"--experimental-websocket"}, args...)
	}
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})

	cmd := exec.CommandContext(testCtx(t), node, args...)
	cmd.Env = []string{
		"RELAY_URL=" + r.URL(), "HTTP_URL=" + r.HTTPURL(),
		"SECRET_HEX=" + owner.sk, "NODE_MODULES=" + modules,
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nostr-tools client: %v\nstderr:\n%s", err, stderr.String())
	}
	var out struct {
		Pubkey      string   `json:"pubkey"`
		Published   string   `json:"published"`
		Websocket   []string `json:"websocket"`
		QueryStatus int      `json:"query_status"`
		Query       []string `json:"query"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("client output %q: %v", stdout.String(), err)
	}
	if out.Pubkey != owner.pk || out.Published == "" {
		t.Fatalf("client output = %+v", out)
	}
	if len(out.Websocket) != 1 || out.Websocket[0] != out.Published {
		t.Errorf("read back over the websocket = %v; want [%s]", out.Websocket, out.Published)
	}
	if out.QueryStatus != 200 || len(out.Query) != 1 || out.Query[0] != out.Published {
		t.Errorf("/query with a nostr-tools NIP-98 token = %d %v; want 200 [%s]", out.QueryStatus, out.Query, out.Published)
	}
}
