//go:build unix

package nostrkey

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	good := writeKey(t, dir, "good", k3+"\n", 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		path  string
		rules FileRules
		want  []string
	}{
		{"world-readable", writeKey(t, dir, "w", k3, 0o644), FileRules{}, []string{"insecure permissions", "chmod 600 " + filepath.Join(dir, "w")}},
		{"group-readable", writeKey(t, dir, "g", k3, 0o640), FileRules{}, []string{"insecure permissions 0640", "chmod 600"}},
		{"owner-exec", writeKey(t, dir, "x", k3, 0o700), FileRules{}, []string{"insecure permissions"}},
		{"directory", dir, FileRules{}, []string{"not a regular file"}},
		{"fifo", fifo, FileRules{}, []string{"not a regular file"}},
		{"symlink", link, FileRules{NoSymlink: true}, []string{"is a symlink"}},
		{"too-big", writeKey(t, dir, "big", k3+strings.Repeat(" ", 1024), 0o600), FileRules{}, []string{"1024-byte limit"}},
		{"garbage", writeKey(t, dir, "garbage", "hello", 0o600), FileRules{}, []string{"invalid nostr private key in keyfile"}},
		{"missing", filepath.Join(dir, "nope"), FileRules{}, []string{"cannot be opened"}},
	}
	for _, c := range cases {
		_, err := ReadFile(c.path, c.rules)
		if err == nil {
			t.Errorf("ReadFile(%s) succeeded; want error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ReadFile(%s) error %q; want it to contain %q", c.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "0003") {
			t.Errorf("ReadFile(%s) error %q shows key material", c.name, err)
		}
	}
	if _, err := ReadFile(link, FileRules{}); err != nil {
		t.Errorf("ReadFile(symlink) without NoSymlink = %v; want success", err)
	}
}

func TestReadFileOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	p := writeKey(t, t.TempDir(), "k", k3, 0o600)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Skip("chown not permitted here:", err)
	}
	if _, err := ReadFile(p, FileRules{OwnerOnly: true}); err == nil || !strings.Contains(err.Error(), "not by the current user") {
		t.Errorf("ReadFile(foreign file, OwnerOnly) = %v; want owner error", err)
	}
	if _, err := ReadFile(p, FileRules{}); err != nil {
		t.Errorf("ReadFile(foreign file) = %v; want success", err)
	}
}
