package up

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/proc"
)

// TestUpMigratesLegacyStateDir: an earlier version kept keys and relay
// data in ./.buzz, inside the tree the agent's shell works in. They move to
// the workspace's state dir, a note says where, and a second start finds
// them there; --dir still names a directory explicitly.
func TestUpMigratesLegacyStateDir(t *testing.T) {
	wd, home := t.TempDir(), t.TempDir()
	old := filepath.Join(wd, upLegacyDir)
	if err := os.MkdirAll(filepath.Join(old, upRelayData), 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{upOwnerKey: "owner-secret\n", upAgentKey: "agent-secret\n", upChannel: "chan\n", filepath.Join(upRelayData, "000001.vlog"): "data"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(old, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	env := proc.Env{Environ: []string{"HOME=" + home}, Dir: wd}
	base, err := upStateDir(env, log, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, filepath.Join(home, ".local", "state", "buzzbox")+string(filepath.Separator)) {
		t.Errorf("state dir %s; want it under %s/.local/state/buzzbox", base, home)
	}
	if fi, err := os.Stat(base); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode: %v %v; want 0700", fi, err)
	}
	for name, body := range files {
		got, err := os.ReadFile(filepath.Join(base, name))
		if err != nil || string(got) != body {
			t.Errorf("%s in the state dir = %q, %v; want %q", name, got, err, body)
		}
		if _, err := os.Stat(filepath.Join(old, name)); err == nil {
			t.Errorf("%s is still in %s", name, old)
		}
	}
	if fi, err := os.Stat(filepath.Join(base, upOwnerKey)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("moved owner key mode: %v %v; want 0600", fi, err)
	}
	note, err := os.ReadFile(filepath.Join(old, upMovedNote))
	if err != nil || !strings.Contains(string(note), base) {
		t.Errorf("note = %q, %v; want it to name %s", note, err, base)
	}
	if !strings.Contains(logs.String(), "moved the workspace's keys") || !strings.Contains(logs.String(), base) {
		t.Errorf("log = %q; want a line saying where the state went", logs.String())
	}

	// Again: nothing left to move, same dir.
	again, err := upStateDir(env, log, "")
	if err != nil || again != base {
		t.Errorf("second start: %q, %v; want %q", again, err, base)
	}
	// A stale ./.buzz with keys next to a migrated state is left alone.
	os.WriteFile(filepath.Join(old, upOwnerKey), []byte("other\n"), 0o600)
	logs.Reset()
	if _, err := upStateDir(env, log, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(base, upOwnerKey)); string(got) != "owner-secret\n" {
		t.Errorf("the migrated owner key was overwritten: %q", got)
	}
	if !strings.Contains(logs.String(), "old state dir is in the working tree") {
		t.Errorf("log = %q; want a warning about the leftover ./.buzz", logs.String())
	}
	if d, err := upStateDir(env, log, ".buzz"); err != nil || d != old {
		t.Errorf("--dir .buzz = %q, %v; want %s", d, err, old)
	}
	if _, err := upStateDir(proc.Env{Dir: wd}, log, ""); err == nil || !strings.Contains(err.Error(), "XDG_STATE_HOME") {
		t.Errorf("no HOME: %v; want an error naming XDG_STATE_HOME", err)
	}
}
