package nostrgit

import (
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
)

// nodeVerify runs testdata/verify.mjs (nostr-tools and @noble, not our
// code) on a request and returns its results and whether all passed.
func nodeVerify(t *testing.T, req map[string]any) (map[string]any, bool) {
	t.Helper()
	nm, node := testexe.NodeModules(t)
	in, _ := json.Marshal(req)
	cmd := exec.Command(node, filepath.Join("testdata", "verify.mjs"), nm)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	var res map[string]any
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("verify.mjs: %v (%v)\n%s", jerr, err, out)
	}
	return res, err == nil
}

func TestExternalVerifier(t *testing.T) {
	// A token exactly as git receives it from the helper.
	out, errOut, code := run(t, CredentialMain, signEnv(t, "NOSTR_PRIVATE_KEY="+k3), validRequest, "get")
	if code != 0 {
		t.Fatalf("credential get: %d %s", code, errOut)
	}
	tok := answerLines(t, out)["credential"]
	// A signature exactly as git stores it, with an owner attestation.
	sig, errOut, code := run(t, SignMain, signEnv(t, "NOSTR_PRIVATE_KEY="+k3, "BUZZ_AUTH_TAG="+authTagV), payloadV, "--status-fd=2", "-bsau", pk3)
	if code != 0 {
		t.Fatalf("sign: %d %s", code, errOut)
	}
	plain, _, _ := run(t, SignMain, signEnv(t, "NOSTR_PRIVATE_KEY="+k3), payloadV, "--status-fd=2", "-bsau", pk3)

	b64 := base64.StdEncoding.EncodeToString([]byte(payloadV))
	for name, armor := range map[string]string{"with oa": sig, "plain": plain, "vector": string(vectorEnvelope(t, false).Armor())} {
		res, ok := nodeVerify(t, map[string]any{
			"nip98": map[string]string{"token": "Nostr " + tok, "url": "https://relay.example.com/git/owner/repo.git", "method": "GET"},
			"nipgs": map[string]string{"armor": armor, "payload": b64},
		})
		if !ok || res["nip98_verify_event"] != true || res["nip98_validate_token"] != true || res["nipgs_schnorr"] != true || res["nip98_pubkey"] != pk3 || res["nipgs_pubkey"] != pk3 {
			t.Errorf("%s: external verifier says %v", name, res)
		}
		if name == "vector" && res["nipgs_hash"] != hashV {
			t.Errorf("external hash %v; want %s", res["nipgs_hash"], hashV)
		}
	}
	// The checks are not vacuous: a changed payload or URL fails.
	res, ok := nodeVerify(t, map[string]any{
		"nip98": map[string]string{"token": "Nostr " + tok, "url": "https://relay.example.com/git/owner/other.git", "method": "GET"},
		"nipgs": map[string]string{"armor": plain, "payload": base64.StdEncoding.EncodeToString([]byte(payloadV + "x"))},
	})
	if ok || res["nipgs_schnorr"] != false || res["nip98_validate_token"] != false {
		t.Errorf("external verifier accepted a changed payload or URL: %v", res)
	}
}
