package nostrgit

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"buzzbox/internal/proc"
	"buzzbox/internal/workspace/nipgs"

	"github.com/nbd-wtf/go-nostr/nip19"
)

// signEnv is an environment outside any repository, git config isolated.
func signEnv(t *testing.T, extra ...string) proc.Env {
	t.Helper()
	needGit(t)
	home := t.TempDir()
	return proc.Env{Environ: gitEnviron(t, home, extra...), Dir: home}
}

func writeSig(t *testing.T, data []byte) string { return writeSigTB(t, data) }

func writeSigTB(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sig")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var envelopeRE = regexp.MustCompile(`^\{"v":1,"pk":"` + pk3 + `","sig":"[0-9a-f]{128}","t":[0-9]+\}$`)

func decodeArmor(t *testing.T, out string) string {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != 4 || lines[0] != nipgs.ArmorBegin || lines[2] != nipgs.ArmorEnd || lines[3] != "" {
		t.Fatalf("signature output %q is not 3 armor lines", out)
	}
	j, err := base64.StdEncoding.DecodeString(lines[1])
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

func TestSignDirect(t *testing.T) {
	env := signEnv(t, "NOSTR_PRIVATE_KEY="+k3)
	out, errOut, code := run(t, SignMain, env, payloadV, "--status-fd=2", "-bsau", pk3)
	if code != 0 {
		t.Fatalf("sign exit %d, stderr %q", code, errOut)
	}
	j := decodeArmor(t, out)
	if !envelopeRE.MatchString(j) {
		t.Errorf("envelope %s does not match %s", j, envelopeRE)
	}
	// Pinned: git looks for SIG_CREATED after a newline.
	if !regexp.MustCompile(`(?m)^\[GNUPG:\] BEGIN_SIGNING\n\[GNUPG:\] SIG_CREATED D 8 1 00 [0-9]+ ` + pk3 + "\n").MatchString(errOut) {
		t.Errorf("sign status %q", errOut)
	}
	// What we signed verifies.
	sig := writeSig(t, []byte(out))
	vout, verr, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd=1", "--verify", sig, "-")
	if code != 0 || !strings.Contains(vout, "\n[GNUPG:] GOODSIG "+pk3+" "+pk3+"\n") {
		t.Errorf("verify of fresh signature: exit %d\n%s\n%s", code, vout, verr)
	}

	npub, _ := nip19.EncodePublicKey(pk3)
	for _, c := range []struct {
		name string
		args []string
		ok   bool
		msg  string
	}{
		{"npub", []string{"--status-fd=2", "-bsau", npub}, true, ""},
		{"upper hex", []string{"--status-fd=2", "-bsau", strings.ToUpper(pk3)}, true, ""},
		{"empty key id", []string{"--status-fd=2", "-bsau", ""}, true, ""},
		{"status to stdout", []string{"--status-fd=1", "-bsau", pk3}, true, "warning: --status-fd=1"},
		{"status-fd unopened", []string{"--status-fd=77", "-bsau", pk3}, true, "warning: --status-fd=77 is not open"},
		{"unknown arg", []string{"--keyid-format=long", "--status-fd", "2", "-bsau", pk3}, true, ""},
		{"other key", []string{"--status-fd=2", "-bsau", pk1}, false, "error: signing key argument (" + pk1 + ") does not match loaded key (" + pk3 + ")"},
		{"ident", []string{"--status-fd=2", "-bsau", "Test <t@x>"}, false, "error: signing key argument (Test <t@x>) is not a recognized key format (expected 64-char hex or npub1...)"},
		{"status-fd 0", []string{"--status-fd=0", "-bsau", pk3}, false, "error: --status-fd"},
		{"no mode", []string{"--status-fd=2"}, false, "error: " + msgNoMode},
		{"no args", nil, false, "error: " + msgNoMode},
		{"both modes", []string{"-bsau", pk3, "--verify", "x", "-"}, false, "error: cannot both sign"},
		{"twice", []string{"-bsau", pk3, "-bsau", pk3}, false, "error: -bsau given twice"},
	} {
		out, errOut, code := run(t, SignMain, env, payloadV, c.args...)
		if c.ok {
			if code != 0 || !strings.Contains(errOut, "SIG_CREATED") {
				t.Errorf("%s: exit %d, stderr %q", c.name, code, errOut)
				continue
			}
			decodeArmor(t, out)
		} else if code != 1 || out != "" {
			t.Errorf("%s: exit %d, stdout %q; want 1 and nothing", c.name, code, out)
		}
		if c.msg != "" && !strings.Contains(errOut, c.msg) {
			t.Errorf("%s: stderr %q; want %q", c.name, errOut, c.msg)
		}
	}
}

func TestSignKeySources(t *testing.T) {
	out, errOut, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd=2", "-bsau", pk3)
	if code != 1 || out != "" || errOut != "error: "+msgNoKeySigner+"\n" {
		t.Errorf("no key: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = run(t, SignMain, signEnv(t, "NOSTR_PRIVATE_KEY="+strings.Repeat("a", 129)), payloadV, "-bsau", pk3)
	if code != 1 || !strings.Contains(errOut, "NOSTR_PRIVATE_KEY exceeds 128-byte size limit") {
		t.Errorf("oversize env: exit %d, stderr %q", code, errOut)
	}
	// Key file from git config, with the signer's strict rules.
	env := signEnv(t)
	keyfile := filepath.Join(env.Dir, "key")
	os.WriteFile(keyfile, []byte(k3+"\n"), 0o600)
	gitCmd(t, env.Environ, env.Dir, "config", "--global", "nostr.keyfile", keyfile)
	if _, errOut, code := run(t, SignMain, env, payloadV, "-bsau", pk3); code != 0 {
		t.Errorf("keyfile 0600: exit %d, %s", code, errOut)
	}
	os.Chmod(keyfile, 0o644)
	if _, errOut, code := run(t, SignMain, env, payloadV, "-bsau", pk3); code != 1 || !strings.Contains(errOut, "insecure permissions") || !strings.Contains(errOut, "chmod 600 "+keyfile) {
		t.Errorf("keyfile 0644: exit %d, %s", code, errOut)
	}
	os.Chmod(keyfile, 0o600)
	link := filepath.Join(env.Dir, "link")
	os.Symlink(keyfile, link)
	gitCmd(t, env.Environ, env.Dir, "config", "--global", "nostr.keyfile", link)
	if _, errOut, code := run(t, SignMain, env, payloadV, "-bsau", pk3); code != 1 || !strings.Contains(errOut, "is a symlink") {
		t.Errorf("keyfile symlink: exit %d, %s", code, errOut)
	}
	// The git config child must not see the key variables; a hostile git
	// config value can't be checked from here, but the env filter can.
	if got := proc.Without([]string{"NOSTR_PRIVATE_KEY=x", "BUZZ_PRIVATE_KEY=y", "A=b"}, "NOSTR_PRIVATE_KEY", "BUZZ_PRIVATE_KEY"); len(got) != 1 {
		t.Errorf("Without = %v", got)
	}
}

func TestSignAuthTag(t *testing.T) {
	env := signEnv(t, "NOSTR_PRIVATE_KEY="+k3, "BUZZ_AUTH_TAG="+authTagV)
	out, errOut, code := run(t, SignMain, env, payloadV, "--status-fd=2", "-bsau", pk3)
	if code != 0 {
		t.Fatalf("sign with OA: exit %d, %s", code, errOut)
	}
	if j := decodeArmor(t, out); !strings.HasSuffix(j, `,"oa":["`+pk1+`","","`+ownerSig+`"]}`) {
		t.Errorf("envelope %s lacks the oa field last", j)
	}
	vout, _, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd=1", "--verify", writeSig(t, []byte(out)), "-")
	if code != 0 || !strings.Contains(vout, "NOTATION_DATA valid\n") {
		t.Errorf("verify own OA signature: exit %d\n%s", code, vout)
	}
	corrupt := strings.Replace(authTagV, ownerSig[:8], "00000000", 1)
	for name, tag := range map[string]string{"corrupt sig": corrupt, "not json": "not-json", "self": `["auth","` + pk3 + `","","` + ownerSig + `"]`} {
		out, errOut, code := run(t, SignMain, signEnv(t, "NOSTR_PRIVATE_KEY="+k3, "BUZZ_AUTH_TAG="+tag), payloadV, "-bsau", pk3)
		if code != 1 || out != "" || !strings.Contains(errOut, "invalid NIP-OA auth tag") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out, errOut)
		}
	}
	_, errOut, code = run(t, SignMain, signEnv(t, "NOSTR_PRIVATE_KEY="+k3, "BUZZ_AUTH_TAG="+corrupt), payloadV, "-bsau", pk3)
	if code != 1 || !strings.Contains(errOut, "the configured BUZZ_AUTH_TAG is invalid or stale") {
		t.Errorf("corrupt sig message: %s", errOut)
	}
}

// wantVerifyLines is the exact status git receives for the vector.
func wantVerifyLines(trust, oaStatus string, owner string) string {
	s := "[GNUPG:] NEWSIG\n" +
		"[GNUPG:] GOODSIG " + pk3 + " " + pk3 + "\n" +
		"[GNUPG:] VALIDSIG " + pk3 + " 2023-11-14 1700000000 0 - - - - - " + pk3 + "\n" +
		"[GNUPG:] " + trust + " 0 shell\n" +
		"[GNUPG:] NOTATION_NAME nostr-trust-model\n" +
		"[GNUPG:] NOTATION_DATA advisory-config-match-only\n" +
		"[GNUPG:] NOTATION_NAME nostr-oa-status\n" +
		"[GNUPG:] NOTATION_DATA " + oaStatus + "\n"
	if owner != "" {
		s += "[GNUPG:] NOTATION_NAME nostr-oa-owner\n[GNUPG:] NOTATION_DATA " + owner + "\n"
	}
	return s
}

func TestVerifyVectors(t *testing.T) {
	sig := writeSig(t, vectorEnvelope(t, false).Armor())
	out, errOut, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd=1", "--verify", sig, "-")
	if code != 0 || out != wantVerifyLines("TRUST_UNDEFINED", "none", "") {
		t.Errorf("verify vector: exit %d\n%s\nstderr %s", code, out, errOut)
	}
	npub, _ := nip19.EncodePublicKey(pk3)
	if want := "git-sign-nostr: Good signature from " + npub + " (" + pk3 + ")\n"; errOut != want {
		t.Errorf("verify stderr %q; want %q", errOut, want)
	}

	// Inside a repository whose user.signingkey is the signer: fully trusted.
	env := signEnv(t)
	gitCmd(t, env.Environ, env.Dir, "init", "-q")
	gitCmd(t, env.Environ, env.Dir, "config", "user.signingkey", pk3)
	if out, _, code := run(t, SignMain, env, payloadV, "--status-fd=1", "--verify", sig, "-"); code != 0 || out != wantVerifyLines("TRUST_FULLY", "none", "") {
		t.Errorf("verify in repo: exit %d\n%s", code, out)
	}
	gitCmd(t, env.Environ, env.Dir, "config", "user.signingkey", npub)
	if out, _, _ := run(t, SignMain, env, payloadV, "--status-fd=1", "--verify", sig, "-"); !strings.Contains(out, "TRUST_FULLY") {
		t.Errorf("verify with npub signingkey: %s", out)
	}

	oaSig := writeSig(t, vectorEnvelope(t, true).Armor())
	if out, _, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd=1", "--verify", oaSig, "-"); code != 0 || out != wantVerifyLines("TRUST_UNDEFINED", "valid", pk1) {
		t.Errorf("verify OA vector: exit %d\n%s", code, out)
	}

	// One byte changed: BADSIG, no GOODSIG.
	tampered := strings.Replace(payloadV, "Initial", "initial", 1)
	out, errOut, code = run(t, SignMain, signEnv(t), tampered, "--status-fd=1", "--verify", sig, "-")
	if code != 1 || out != "[GNUPG:] NEWSIG\n[GNUPG:] BADSIG "+pk3+" "+pk3+"\n" || !strings.Contains(errOut, "BAD signature") {
		t.Errorf("verify tampered: exit %d\n%s\n%s", code, out, errOut)
	}

	// The OA envelope with its oa field removed no longer verifies.
	e := vectorEnvelope(t, true)
	e.OA = nil
	out, _, code = run(t, SignMain, signEnv(t), payloadV, "--status-fd=1", "--verify", writeSig(t, e.Armor()), "-")
	if code != 1 || strings.Contains(out, "GOODSIG") {
		t.Errorf("verify OA vector without oa: exit %d\n%s", code, out)
	}
}

func TestVerifyRefuses(t *testing.T) {
	j := string(vectorEnvelope(t, false).JSON())
	for name, c := range map[string]struct {
		data   []byte
		errsig string
	}{
		"space":      {armorJSON("{ " + j[1:]), pk3},
		"v2":         {armorJSON(strings.Replace(j, `"v":1`, `"v":2`, 1)), pk3},
		"extra":      {armorJSON(strings.TrimSuffix(j, "}") + `,"x":1}`), pk3},
		"upper pk":   {armorJSON(strings.Replace(j, pk3, strings.ToUpper(pk3), 1)), errsigUnknown},
		"float t":    {armorJSON(strings.Replace(j, "1700000000", "1700000000.0", 1)), pk3},
		"big t":      {armorJSON(strings.Replace(j, "1700000000", "9999999999", 1)), pk3},
		"crlf":       {[]byte(strings.ReplaceAll(string(vectorEnvelope(t, false).Armor()), "\n", "\r\n")), errsigUnknown},
		"not base64": {[]byte("hello\nworld\n"), errsigUnknown},
	} {
		out, errOut, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd=1", "--verify", writeSig(t, c.data), "-")
		want := "[GNUPG:] ERRSIG " + c.errsig + " 0 0 00 0 9\n"
		if code != 1 || !strings.Contains(out, want) || strings.Contains(out, "GOODSIG") || !strings.HasPrefix(errOut, "error: ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", name, code, out, errOut, want)
		}
	}
	// Without "-" the verifier must not wait on stdin.
	blocking := proc.Env{Stdin: blockReader{}}
	if code := SignMain(t.Context(), []string{"--status-fd=1", "--verify", "x"}, blocking); code != 1 {
		t.Errorf("--verify without -: exit %d", code)
	}
	if _, errOut, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd=9", "--verify", "x", "-"); code != 1 || !strings.Contains(errOut, "not an open file descriptor") {
		t.Errorf("verify to unopened fd: exit %d, %s", code, errOut)
	}
	if out, _, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd=1", "--verify", filepath.Join(t.TempDir(), "missing"), "-"); code != 1 || !strings.Contains(out, "ERRSIG "+errsigUnknown) {
		t.Errorf("verify missing file: exit %d, %s", code, out)
	}
	big := writeSig(t, []byte(strings.Repeat("a", maxSigFileBytes+1)))
	if _, errOut, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd=1", "--verify", big, "-"); code != 1 || !strings.Contains(errOut, "larger than") {
		t.Errorf("verify oversized file: exit %d, %s", code, errOut)
	}
	if out, _, code := run(t, SignMain, signEnv(t), payloadV, "--keyid-format=long", "--status-fd=1", "--verify", writeSig(t, vectorEnvelope(t, false).Armor()), "-"); code != 0 || !strings.Contains(out, "GOODSIG") {
		t.Errorf("verify with unknown arg: exit %d, %s", code, out)
	}
}

// blockReader fails the test by hanging if read; the verifier must refuse
// before touching stdin.
type blockReader struct{}

func (blockReader) Read([]byte) (int, error) { select {} }

func TestSignKeyIDHidesNsec(t *testing.T) {
	nsec, _ := nip19.EncodePrivateKey(k3)
	_, errOut, code := run(t, SignMain, signEnv(t, "NOSTR_PRIVATE_KEY="+k3), payloadV, "-bsau", nsec)
	if code != 1 || strings.Contains(errOut, nsec[5:20]) || !strings.Contains(errOut, "not a recognized key format") {
		t.Errorf("-bsau nsec: %d %q", code, errOut)
	}
}

func TestHelp(t *testing.T) {
	for name, main := range map[string]func(context.Context, []string, proc.Env) int{"sign": SignMain, "credential": CredentialMain} {
		out, errOut, code := run(t, main, proc.Env{}, "", "--help")
		if code != 0 || !strings.HasPrefix(out, "usage: git-") || errOut != "" {
			t.Errorf("%s --help: %d %q %q", name, code, out, errOut)
		}
	}
}
