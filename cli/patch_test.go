package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyPatch(t *testing.T) {
	old := "one\ntwo\nthree\nfour\nfive\n"
	diff := "--- a\n+++ b\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n@@ -5 +5,2 @@\n five\n+six\n"
	h, err := parsePatch(diff)
	if err != nil {
		t.Fatal(err)
	}
	got, err := applyPatch(old, h)
	if err != nil || got != "one\nTWO\nthree\nfour\nfive\nsix\n" {
		t.Fatalf("applyPatch = %q, %v", got, err)
	}
	// Strict position: the same hunk declared one line off is refused.
	h, _ = parsePatch("@@ -2,3 +2,3 @@\n one\n-two\n+TWO\n three\n")
	if _, err := applyPatch(old, h); err == nil {
		t.Fatal("a hunk at the wrong line applied")
	}
	// No newline at end of file, on both sides.
	h, err = parsePatch("@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := applyPatch("a", h); err != nil || got != "b" {
		t.Fatalf("no-EOL patch = %q, %v", got, err)
	}
	h, _ = parsePatch("@@ -0,0 +1,2 @@\n+x\n+y\n")
	if got, err := applyPatch("", h); err != nil || got != "x\ny\n" {
		t.Fatalf("insertion into empty = %q, %v", got, err)
	}
	for _, bad := range []string{"", "no hunks\n", "@@ -1 +1 @@\n", "@@ -1,2 +1 @@\n-a\n", "--- a\n--- b\n@@ -1 +1 @@\n-a\n+b\n", "@@ -x +1 @@\n"} {
		if _, err := parsePatch(bad); err == nil {
			t.Errorf("parsePatch(%q) accepted", bad)
		}
	}
}

// TestApplyPatchFromDiff applies what GNU diff -u makes.
func TestApplyPatchFromDiff(t *testing.T) {
	diffExe, err := exec.LookPath("diff")
	if err != nil {
		t.Skip("SKIP(loud): diff (Debian diffutils) is not installed")
	}
	dir := t.TempDir()
	a := "alpha\n\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\ntheta\niota\n"
	b := "alpha\n\nBETA\ngamma\ndelta\nepsilon\nzeta\neta\ntheta\niota\nkappa"
	os.WriteFile(filepath.Join(dir, "a"), []byte(a), 0o600)
	os.WriteFile(filepath.Join(dir, "b"), []byte(b), 0o600)
	out, _ := exec.Command(diffExe, "-u", filepath.Join(dir, "a"), filepath.Join(dir, "b")).Output()
	h, err := parsePatch(string(out))
	if err != nil {
		t.Fatalf("parsePatch(diff -u): %v\n%s", err, out)
	}
	if got, err := applyPatch(a, h); err != nil || got != b {
		t.Fatalf("applyPatch = %q, %v\n%s", got, err, out)
	}
}

func FuzzPatch(f *testing.F) {
	f.Add("one\ntwo\n", "@@ -1,2 +1,2 @@\n one\n-two\n+2\n")
	f.Add("a", "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n")
	f.Fuzz(func(t *testing.T, value, diff string) {
		h, err := parsePatch(diff)
		if err != nil {
			return
		}
		got, err := applyPatch(value, h)
		if err != nil {
			return
		}
		if len(got) > len(value)+len(diff) {
			t.Fatalf("patched value of %d bytes from %d + %d", len(got), len(value), len(diff))
		}
		if strings.Count(diff, "\n+") == 0 && strings.Count(diff, "\n-") == 0 && got != value {
			t.Fatalf("a diff without changes changed the value")
		}
	})
}
