//go:build unix

package rg

import "golang.org/x/sys/unix"

func terminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), ioctlReadTermios)
	return err == nil
}
