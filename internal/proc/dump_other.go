//go:build !linux

package proc

// NoDump does nothing outside Linux: there is no PR_SET_DUMPABLE, and
// other systems guard a process's memory and environment by their own
// rules.
func NoDump() error { return nil }
