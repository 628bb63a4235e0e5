//go:build !linux

package proc

import "os/exec"

// Start starts cmd. Only Linux can tie a child's life to its parent's
// (PR_SET_PDEATHSIG); elsewhere a child outlives a parent that is killed
// and is stopped only through its stdin and process group.
func Start(cmd *exec.Cmd) error { return cmd.Start() }
