package devmcp

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWalkNoFollowRefusesSymlinks: the walk used where openat2 is missing
// opens a path of real directories and refuses a symlink at any place on
// it, last component included.
func TestWalkNoFollowRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"la": "a", "a/lb": "b", "a/b/lf": "f"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := walkNoFollow(filepath.Join(dir, "a", "b", "f"), unix.O_RDONLY)
	if err != nil {
		t.Fatalf("walk of real directories: %v", err)
	}
	unix.Close(fd)
	for _, p := range []string{"la/b/f", "a/lb/f", "a/b/lf"} {
		for _, flags := range []int{unix.O_RDONLY, unix.O_DIRECTORY | oSearch} {
			fd, err := walkNoFollow(filepath.Join(dir, p), flags)
			if err == nil {
				unix.Close(fd)
			}
			if !isSymlinkOnPath(err) {
				t.Errorf("walkNoFollow(%s, %#x) = %v; want ELOOP or ENOTDIR", p, flags, err)
			}
		}
	}
	if _, err := walkNoFollow("relative/path", unix.O_RDONLY); err == nil {
		t.Error("walkNoFollow of a relative path succeeded")
	}
}

// TestOpenCanonicalSwapRaceWalk: openCanonical without openat2 (the walk)
// under a stream of swaps between a directory and a symlink to a secret
// never opens the secret.
func TestOpenCanonicalSwapRaceWalk(t *testing.T) {
	noOpenat2.Store(true)
	t.Cleanup(func() { noOpenat2.Store(false) })
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, b, hidden := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "hidden")
	for _, d := range []string{a, hidden} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(a, "key"), []byte("decoy"), 0o600)
	os.WriteFile(filepath.Join(hidden, "key"), []byte("secret"), 0o600)
	if err := os.Symlink(hidden, b); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				t.Error(err)
				return
			}
			swaps.Add(1)
		}
	}()
	halt := func() { stop.Store(true); wg.Wait() }
	t.Cleanup(halt)
	opened, changed := 0, 0
	for i := 0; i < 20000 || swaps.Load() < 10000; i++ {
		o, err := openCanonical(filepath.Join(a, "key"))
		if errors.Is(err, errPathChanged) {
			changed++
			continue
		}
		if err != nil {
			continue // the name is the symlink's for a moment: not found
		}
		data, _ := io.ReadAll(o.f)
		o.close()
		if string(data) != "decoy" {
			t.Fatalf("opened %q through a swapped symlink", data)
		}
		opened++
	}
	halt()
	t.Logf("%d swaps, %d opened, %d refused as changed", swaps.Load(), opened, changed)
	if opened == 0 || changed == 0 {
		t.Errorf("opened %d, refused %d; want both to happen", opened, changed)
	}
}
