//go:build !unix

package rg

func terminal(fd uintptr) bool { return false }
