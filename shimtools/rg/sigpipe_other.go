//go:build !unix

package rg

func ignoreSIGPIPE() {}
