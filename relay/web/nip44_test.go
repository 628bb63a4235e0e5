package web_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"
)

func nodeOrSkip(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node") // the modules need no npm packages
	if err != nil {
		t.Skip("SKIP(loud): node is not installed; the NIP-44 module is not checked outside a browser")
	}
	return node
}

// TestNIP44Vectors runs testdata/nip44.mjs: the page's NIP-44 v2 module
// against the official test vectors (conversation keys, message keys,
// padding, payloads, and every invalid case rejected).
func TestNIP44Vectors(t *testing.T) {
	node := nodeOrSkip(t)
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	out, err := exec.Command(node, filepath.Join("testdata", "nip44.mjs"), dir, filepath.Join("testdata", "nip44.vectors.json")).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("nip44.mjs: %v\n%s", err, out)
	}
}

// TestNIP44CrossGoNostr encrypts with go-nostr's nip44 (as the harness's
// observer does), decrypts in the page's module under node, and decrypts
// the module's reply with go-nostr.
func TestNIP44CrossGoNostr(t *testing.T) {
	node := nodeOrSkip(t)
	harness, owner := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	harnessPub, _ := nostr.GetPublicKey(harness)
	ownerPub, _ := nostr.GetPublicKey(owner)
	ck, err := nip44.GenerateConversationKey(ownerPub, harness)
	if err != nil {
		t.Fatal(err)
	}
	plain := `{"type":"tool_call","title":"shell: ls ✓","output":"` + strings.Repeat("x", 3000) + `"}`
	payload, err := nip44.Encrypt(plain, ck)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(map[string]string{"sk": owner, "peer": harnessPub, "payload": payload})
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	cmd := exec.Command(node, filepath.Join("testdata", "nip44cross.mjs"), dir)
	cmd.Stdin = bytes.NewReader(req)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nip44cross.mjs: %v\n%s", err, out)
	}
	var got struct{ Plain, Reply string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("nip44cross.mjs output %q: %v", out, err)
	}
	if got.Plain != plain {
		t.Fatalf("node decrypted %q, want %q", got.Plain, plain)
	}
	back, err := nip44.Decrypt(got.Reply, ck)
	if err != nil || back != plain+" and back" {
		t.Fatalf("go-nostr decrypted the reply to %q, %v", back, err)
	}
}

// TestTranscriptModule runs testdata/transcript.mjs: decrypted observer
// frames fold into the triggering message's tool calls (title, status,
// duration, input, output), out of order, without duplicates, truncated
// to the module's named limits.
func TestTranscriptModule(t *testing.T) {
	node := nodeOrSkip(t)
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	out, err := exec.Command(node, filepath.Join("testdata", "transcript.mjs"), dir).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("transcript.mjs: %v\n%s", err, out)
	}
}
