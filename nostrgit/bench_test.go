package nostrgit

import (
	"io"
	"strings"
	"testing"

	"buzzbox/internal/proc"
)

// BenchmarkSignInProcess is the signer's own work per signature (key
// parse, hash, BIP-340, armor), without process start or git children.
func BenchmarkSignInProcess(b *testing.B) {
	env := proc.Env{Environ: []string{"NOSTR_PRIVATE_KEY=" + k3, "BUZZ_AUTH_TAG=" + authTagV}, Stdout: io.Discard, Stderr: io.Discard}
	b.ReportAllocs()
	for b.Loop() {
		env.Stdin = strings.NewReader(payloadV)
		if SignMain(b.Context(), []string{"--status-fd=2", "-bsau", pk3}, env) != 0 {
			b.Fatal("sign failed")
		}
	}
}

// BenchmarkVerifyInProcess is the verifier's own work, with trust read
// from a git config child (the real cost git pays per verification).
func BenchmarkVerifyInProcess(b *testing.B) {
	needGit(b)
	home := b.TempDir()
	env := proc.Env{Environ: gitEnviron(b, home), Dir: home, Stdout: io.Discard, Stderr: io.Discard}
	sig := writeSigTB(b, vectorEnvelope(b, false).Armor())
	b.ReportAllocs()
	for b.Loop() {
		env.Stdin = strings.NewReader(payloadV)
		if SignMain(b.Context(), []string{"--status-fd=1", "--verify", sig, "-"}, env) != 0 {
			b.Fatal("verify failed")
		}
	}
}
