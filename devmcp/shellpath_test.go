package devmcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveShell(t *testing.T) {
	dir := t.TempDir()
	zsh := filepath.Join(dir, "zsh")
	os.WriteFile(zsh, []byte("#!/bin/true\n"), 0o755)
	pwsh := filepath.Join(dir, "pwsh.exe")
	os.WriteFile(pwsh, nil, 0o644)
	empty := t.TempDir()

	for _, tc := range []struct {
		name, buzzShell, path string
		wantPath, wantName    string
		wantFlag              string
	}{
		{"absolute BUZZ_SHELL", zsh, empty, zsh, "zsh", "-c"},
		{"bare BUZZ_SHELL through PATH, no exec bit needed", "pwsh.exe", dir, pwsh, "pwsh", "-Command"},
		{"BUZZ_SHELL missing falls back to bash", "/no/such/shell", dir + ":" + empty, "", "", ""},
	} {
		got := resolveShellIn(tc.buzzShell, tc.path, "/", nil)
		if tc.wantPath == "" {
			if got.err == nil || !strings.Contains(got.err.Error(), "$BUZZ_SHELL=/no/such/shell (not found)") {
				t.Errorf("%s: %+v; want an error naming what was tried", tc.name, got)
			}
			continue
		}
		if got.err != nil || got.path != tc.wantPath || got.name != tc.wantName || got.flag != tc.wantFlag {
			t.Errorf("%s: %+v; want %s %s %s", tc.name, got, tc.wantPath, tc.wantName, tc.wantFlag)
		}
	}

	got := resolveShellIn("", empty, "/", []string{empty})
	if got.err == nil {
		t.Fatalf("no shell anywhere: %+v; want an error", got)
	}
	for _, want := range []string{"no shell found", "$BUZZ_SHELL (unset)", "bash in PATH", "sh in PATH", filepath.Join(empty, "bash"), "set BUZZ_SHELL"} {
		if !strings.Contains(got.err.Error(), want) {
			t.Errorf("error %q lacks %q", got.err, want)
		}
	}
	if b := bootstrapText("/w", got, false); !strings.Contains(b, "set BUZZ_SHELL to override") || !strings.Contains(b, "unavailable") {
		t.Errorf("bootstrap without a shell = %q", b)
	}
}
