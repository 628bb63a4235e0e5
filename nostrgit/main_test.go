package nostrgit

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"buzzbox/internal/proc"
	"buzzbox/internal/testexe"
)

// TestMain lets the test binary stand in for the two helpers: started
// through a link named git-sign-nostr or git-credential-nostr (as git starts
// them), it runs that identity and exits. So the end-to-end tests drive real
// git against this package alone; TestDispatch covers the real executable.
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "git-sign-nostr":
		os.Exit(SignMain(context.Background(), os.Args[1:], proc.OS()))
	case "git-credential-nostr":
		os.Exit(CredentialMain(context.Background(), os.Args[1:], proc.OS()))
	}
	os.Exit(testexe.RunTests(m))
}

// helperBin returns a directory holding git-sign-nostr and
// git-credential-nostr links to exe (the test binary when exe is "").
func helperBin(t testing.TB, exe string) string {
	t.Helper()
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for _, name := range []string{"git-sign-nostr", "git-credential-nostr"} {
		if err := os.Symlink(exe, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
