//go:build unix

package nostrgit

import (
	"path/filepath"
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
