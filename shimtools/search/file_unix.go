//go:build unix

package search

import (
	"io"
	"io/fs"
	"syscall"
)

// File is an open file read with plain system calls. os.File registers
// every file with the runtime poller and a finalizer, which costs more
// than the search of a small source file; a walk opens thousands.
type File struct{ fd int }

// Open opens path for reading. The size is not asked for (-1): the
// searcher's buffer takes a small file in one read, and one system call
// per file less is worth more than an exact allocation.
func Open(path string) (*File, int64, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, 0, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return &File{fd: fd}, -1, nil
	}
}

// Read implements io.Reader.
func (f *File) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(f.fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// Close closes the file.
func (f *File) Close() error { return syscall.Close(f.fd) }
