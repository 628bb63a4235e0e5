//go:build !unix

package harness

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd, _ bool) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}
