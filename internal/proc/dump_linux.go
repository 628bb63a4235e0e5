package proc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// NoDump marks the calling process non-dumpable (prctl PR_SET_DUMPABLE 0):
// no core dumps, and processes of the same user can no longer read its
// /proc/PID/environ and /proc/PID/mem or attach to it with ptrace. Root
// still can (CAP_SYS_PTRACE); a sandbox has to stop that. The setting
// does not survive execve of a readable executable, so children start
// dumpable again. Identities that hold secrets call it first thing.
func NoDump() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_DUMPABLE: %w", err)
	}
	return nil
}
