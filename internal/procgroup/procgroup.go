// Package procgroup starts children in process groups of their own and
// signals those groups, so that a child's whole tree (a shell's
// grandchildren, an agent's tools) stops with it: killing only the direct
// child would leave the rest holding its pipes.
//
// On systems without POSIX process groups (Windows) a child is its own
// "group": only the direct child can be signalled, and Alive reports
// false. buzzbox ships for Unix; the other builds compile and degrade.
package procgroup

import "os/exec"

// Set makes cmd's child the leader of a new process group. Call it before
// cmd.Start; it keeps any other SysProcAttr field already set.
func Set(cmd *exec.Cmd) { set(cmd) }
