//go:build linux

package walk

import (
	"io/fs"
	"os"
	"syscall"
	"unsafe"
)

// readDir lists a directory with getdents64, without os.File (which costs
// poller registration and fcntl calls per directory). Entry types come
// from the directory itself; unknown ones are filled in with lstat.
func readDir(path string) ([]dirent, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf := make([]byte, direntBufSize)
	var out []dirent
	for {
		n, err := syscall.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return out, &fs.PathError{Op: "readdirent", Path: path, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		for off := 0; off < n; {
			// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
			if reclen == 0 || off+reclen > n {
				break
			}
			typ := buf[off+18]
			nameb := buf[off+19 : off+reclen]
			l := 0
			for l < len(nameb) && nameb[l] != 0 {
				l++
			}
			name := string(nameb[:l])
			off += reclen
			if name == "." || name == ".." {
				continue
			}
			var mode fs.FileMode
			switch typ {
			case syscall.DT_DIR:
				mode = fs.ModeDir
			case syscall.DT_REG:
				mode = 0
			case syscall.DT_LNK:
				mode = fs.ModeSymlink
			case syscall.DT_UNKNOWN:
				fi, err := os.Lstat(path + "/" + name)
				if err != nil {
					continue
				}
				mode = fi.Mode().Type()
			default:
				mode = fs.ModeIrregular
			}
			out = append(out, dirent{name: name, typ: mode})
		}
	}
}
