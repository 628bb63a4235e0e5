//go:build unix

package nostrgit

import "syscall"

// fdOpen reports whether fd is an open descriptor of this process.
func fdOpen(fd int) bool {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil
}

// fdWriter writes straight to a descriptor git opened for us. It is not an
// *os.File so that no finalizer ever closes the descriptor (spec: never
// close it).
type fdWriter int

func (f fdWriter) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := syscall.Write(int(f), p[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}
