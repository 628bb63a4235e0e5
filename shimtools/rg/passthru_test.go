package rg_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
)

// TestPassThroughToRealRG puts our rg link first on PATH and a stand-in
// "real" rg after it: the link must run the stand-in with the same
// arguments, stdio and exit status, and with our directory cleaned out of
// its PATH.
func TestPassThroughToRealRG(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("SKIP(loud): no sh to write the stand-in rg with")
	}
	ours := testexe.Link(t, "rg")
	fake := t.TempDir()
	script := "#!" + sh + "\necho \"stand-in rg: $*\"\necho \"PATH=$PATH\"\nexit 7\n"
	if err := os.WriteFile(filepath.Join(fake, "rg"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Dir(ours) + string(os.PathListSeparator) + fake
	cmd := exec.Command(ours, "-n", "needle", "dir")
	cmd.Env = []string{"PATH=" + path}
	out, err := cmd.Output()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 7 {
		t.Fatalf("rg via link = %v; want the stand-in's exit 7 (output %q)", err, out)
	}
	if !strings.Contains(string(out), "stand-in rg: -n needle dir") {
		t.Errorf("stand-in output %q; want its echo of the arguments", out)
	}
	if strings.Contains(string(out), filepath.Dir(ours)) {
		t.Errorf("stand-in saw our directory on PATH: %q", out)
	}

	// BUZZBOX_SHIM_PASSTHROUGH=0 keeps the built-in one.
	cmd = exec.Command(ours, "--type-list")
	cmd.Env = []string{"PATH=" + path, "BUZZBOX_SHIM_PASSTHROUGH=0"}
	out, err = cmd.Output()
	if err != nil || !strings.Contains(string(out), "go: *.go") {
		t.Errorf("rg --type-list with pass-through off = %v, %q; want the built-in list", err, out)
	}

	// Without any real rg, the built-in one answers.
	cmd = exec.Command(ours, "--type-list")
	cmd.Env = []string{"PATH=" + filepath.Dir(ours)}
	out, err = cmd.Output()
	if err != nil || !strings.Contains(string(out), "go: *.go") {
		t.Errorf("rg --type-list with no real rg = %v, %q; want the built-in list", err, out)
	}
}
