//go:build !unix

package procgroup

import (
	"os"
	"os/exec"
	"syscall"
)

func set(*exec.Cmd) {}

// Signal ends the process pgid (its group cannot be reached here): any
// terminating signal kills it.
func Signal(pgid int, sig syscall.Signal) {
	if sig == 0 || pgid <= 0 {
		return
	}
	if p, err := os.FindProcess(pgid); err == nil {
		_ = p.Kill() // already gone is fine
	}
}

// Alive reports false: there is no group to look into.
func Alive(int) bool { return false }

// Reap does nothing: there are no orphans to collect.
func Reap(int) {}
