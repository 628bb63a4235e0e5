//go:build !unix

package nostrgit

import "io"

// fdOpen cannot check descriptors here; only 1 and 2 are usable.
func fdOpen(int) bool { return false }

type fdWriter int

func (fdWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }
