//go:build unix

package nostrgit

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestVerifyRefusesFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd=1", "--verify", fifo, "-")
	if code != 1 || !strings.Contains(out, "ERRSIG") || !strings.Contains(errOut, "not a regular file") {
		t.Errorf("verify FIFO: exit %d, %s %s", code, out, errOut)
	}
}

// TestStatusFD writes status to a descriptor other than 1 and 2, as gpg
// callers may ask; the writer must reach it and leave it open.
func TestStatusFD(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := strconv.Itoa(int(w.Fd()))
	sig := writeSig(t, vectorEnvelope(t, false).Armor())
	out, errOut, code := run(t, SignMain, signEnv(t), payloadV, "--status-fd="+fd, "--verify", sig, "-")
	if code != 0 || out != "" {
		t.Fatalf("verify to fd %s: %d %q %q", fd, code, out, errOut)
	}
	sout, serr, code := run(t, SignMain, signEnv(t, "NOSTR_PRIVATE_KEY="+k3), payloadV, "--status-fd", fd, "-bsau", pk3)
	if code != 0 || strings.Contains(serr, "SIG_CREATED") {
		t.Fatalf("sign to fd %s: %d %q", fd, code, serr)
	}
	decodeArmor(t, sout)
	if err := w.Close(); err != nil { // the helper must have left it open
		t.Errorf("status fd was closed by the helper: %v", err)
	}
	got, _ := io.ReadAll(r)
	if want := wantVerifyLines("TRUST_UNDEFINED", "none", ""); !strings.HasPrefix(string(got), want) || !strings.Contains(string(got), "[GNUPG:] SIG_CREATED D 8 1 00 ") {
		t.Errorf("status on fd %s:\n%s", fd, got)
	}
}
