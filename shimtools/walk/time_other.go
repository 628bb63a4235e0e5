//go:build !linux

package walk

import "io/fs"

// fileTime returns the entry's modified time in nanoseconds; access and
// creation times are not read on this platform.
func fileTime(_ string, fi fs.FileInfo, which string) (int64, bool) {
	if which == "modified" {
		return fi.ModTime().UnixNano(), true
	}
	return 0, false
}
