//go:build !unix

package devmcp

import (
	"os"
	"os/exec"
)

// On systems without POSIX process groups the shell is its own "group":
// only the direct child can be signalled, so grandchildren may survive a
// timeout. (Windows would need a Job Object; buzzbox ships for Unix.)

func setGroup(*exec.Cmd) {}

func groupAlive(int) bool { return false }

func termGroup(pid int) { killGroup(pid) }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill() // already gone is fine
	}
}

func reapGroup(int) {}
