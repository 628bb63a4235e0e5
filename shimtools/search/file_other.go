//go:build !unix

package search

import "os"

// File is an open file.
type File struct{ *os.File }

// Open opens path for reading and returns its size (-1 if not a regular
// file).
func Open(path string) (*File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return &File{f}, size, nil
}
