//go:build unix

package rg

import (
	"os/signal"
	"syscall"
)

func ignoreSIGPIPE() { signal.Ignore(syscall.SIGPIPE) }
