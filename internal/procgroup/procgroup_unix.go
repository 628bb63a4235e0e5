//go:build unix

package procgroup

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func set(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// Signal sends sig to every process of the group pgid leads. A group that
// is already gone is not an error.
func Signal(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig) // ESRCH: already gone
	}
}

// Alive reports whether any live process is left in the group. kill(2)
// with signal 0 also counts zombies, which hold no pipe and need no signal
// but may wait a long while for a lazy init to reap them; so when kill
// says yes, /proc is asked where it can be read.
func Alive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if err != nil && err != syscall.EPERM {
		return false
	}
	alive, known := procAlive(pgid)
	return alive || !known
}

// Reap collects exited members of the group that are this process's
// children, which happens when it runs as PID 1 of a container and orphans
// are handed to it. It never blocks, and must only be called once the
// leader's own Wait has returned, so it cannot take the leader's status.
func Reap(pgid int) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}

// procAlive scans /proc for a process of group pgid that is not a zombie.
// known is false when /proc cannot be read (then the caller trusts kill).
func procAlive(pgid int) (alive, known bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return false, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false, false
	}
	want := []byte(strconv.Itoa(pgid))
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid pgrp ...": comm may hold anything, so
		// parse after its last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 || !bytes.Equal(f[2], want) {
			continue
		}
		if s := f[0]; len(s) == 1 && (s[0] == 'Z' || s[0] == 'X') {
			continue
		}
		return true, true
	}
	return false, true
}
