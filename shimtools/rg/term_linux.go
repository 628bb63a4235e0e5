//go:build linux

package rg

import "golang.org/x/sys/unix"

const ioctlReadTermios = unix.TCGETS
