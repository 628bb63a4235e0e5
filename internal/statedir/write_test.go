package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileModesAndReplace: a state file is made 0600 in a 0700 dir,
// replaces the old one whole, and leaves no temporary file behind.
func TestWriteFileModesAndReplace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "s.json")
	for _, body := range []string{"first", "second"} {
		if err := WriteFile(path, []byte(body)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != body {
			t.Fatalf("ReadFile = %q, %v; want %q", got, err, body)
		}
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode %v; want %v", p, st.Mode().Perm(), want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("dir holds %d entries; want only s.json", len(entries))
	}
}
