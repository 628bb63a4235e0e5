package cli

import (
	"strings"
	"testing"
	"time"

	"buzzbox/internal/workspace/nipoa"
)

// FuzzAttestConditions: whatever --kinds and --until hold, agents attest
// either refuses them as a user error or builds conditions nipoa parses.
func FuzzAttestConditions(f *testing.F) {
	f.Add("1", "720h")
	f.Add("1,7", "")
	f.Add("65536", "2026-12-31T00:00:00Z")
	f.Add(" 9 ", "4294967295")
	f.Add("", "-5s")
	now := time.Unix(1_700_000_000, 0)
	sig := strings.Repeat("0", 128)
	f.Fuzz(func(t *testing.T, kinds, until string) {
		conds, err := attestConditions(kinds, until, now)
		if err != nil {
			if asError(err).Category != catUser {
				t.Fatalf("attestConditions(%q, %q): %v is not a user error", kinds, until, err)
			}
			return
		}
		if _, err := nipoa.FromParts(examplePubkey, conds, sig); err != nil {
			t.Fatalf("attestConditions(%q, %q) = %q, which nipoa refuses: %v", kinds, until, conds, err)
		}
	})
}
