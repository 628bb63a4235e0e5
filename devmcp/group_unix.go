//go:build unix

package devmcp

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// setGroup makes the child the leader of a new process group, so the whole
// tree it starts can be signalled at once: killing only the shell would
// leave grandchildren holding the output pipes.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// groupAlive reports whether any live process is left in the group. kill(2)
// with signal 0 also counts zombies, which hold no pipe and need no signal
// but may wait a long while for a lazy init to reap them; so when kill says
// yes, procGroupAlive takes a closer look where /proc allows.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if err != nil && err != syscall.EPERM {
		return false
	}
	alive, known := procGroupAlive(pgid)
	return alive || !known
}

func termGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGTERM) } // ESRCH: already gone
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) } // ESRCH: already gone

// reapGroup collects exited members of the group that are this process's
// children, which happens when it runs as PID 1 of a container and orphans
// are handed to it. It never blocks, and must only be called once the
// shell's own Wait has returned, so it cannot take the shell's status.
func reapGroup(pgid int) {
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

// procGroupAlive scans /proc for a process of group pgid that is not a
// zombie. known is false when /proc cannot be read (then the caller trusts
// kill).
func procGroupAlive(pgid int) (alive, known bool) {
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
