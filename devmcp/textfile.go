package devmcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// resolvePath turns a tool's path argument into a canonical absolute path:
// relative paths are joined to root (the call's workdir, else the server's
// working directory), then symlinks are followed.
//
// The caller checks the result against the fence and opens it with no
// symlink followed (openChecked), so a symlink swapped in after this
// resolution cannot redirect the open.
func resolvePath(root, p string) (string, error) {
	cand := p
	if !filepath.IsAbs(cand) {
		cand = filepath.Join(root, cand)
	}
	canon, err := filepath.EvalSymlinks(cand)
	if err != nil {
		return "", toolErrorf("path not accessible: %s (%s)", cand, causeOf(err))
	}
	abs, err := filepath.Abs(canon)
	if err != nil {
		return "", toolErrorf("path not accessible: %s (%s)", cand, causeOf(err))
	}
	return abs, nil
}

// textFile is a loaded text file.
type textFile struct {
	path    string      // canonical absolute path
	content []byte      // the whole file, valid UTF-8
	info    fs.FileInfo // stat of the file opened
	dir     *heldDir    // its directory, held open; the caller closes it
	name    string      // its name in dir
}

// loadText runs the text pipeline shared by read_file and str_replace:
// resolve, check the fence (for writing when write is set), open what was
// checked (openChecked), check kind and size, read with a bound, check
// encoding. The caller closes the returned file's dir.
func loadText(root, p string, fc *fence, write bool) (*textFile, error) {
	o, err := openChecked(root, p, fc, write)
	if err != nil {
		return nil, err
	}
	defer o.f.Close()
	t, err := readText(o)
	if err != nil {
		o.dir.close()
		return nil, err
	}
	return t, nil
}

func readText(o *openedFile) (*textFile, error) {
	path, info := o.path, o.info
	if info.Size() > maxTextFileBytes {
		return nil, toolErrorf("file too large: %s is %d bytes (limit %d bytes); use the shell tool (rg, head, tail, sed -n) to look at parts of it", path, info.Size(), maxTextFileBytes)
	}
	content, err := readBounded(o.f, info.Size(), maxTextFileBytes)
	if err != nil {
		return nil, toolErrorf("cannot read %s: %s", path, causeOf(err))
	}
	if len(content) > maxTextFileBytes {
		return nil, toolErrorf("file too large: %s grew past %d bytes while being read", path, maxTextFileBytes)
	}
	if i := bytes.IndexByte(content, 0); i >= 0 {
		return nil, toolErrorf("binary file: %s has a NUL byte at offset %d; the text tools only handle text (try the shell tool: file, xxd, strings)", path, i)
	}
	if !utf8.Valid(content) {
		return nil, toolErrorf("not valid UTF-8: %s: invalid byte at offset %d; the text tools only handle UTF-8 text (try the shell tool: iconv, xxd)", path, firstInvalidUTF8(content))
	}
	return &textFile{path: path, content: content, info: info, dir: o.dir, name: o.name}, nil
}

// readBounded reads r to EOF, expecting about size bytes, and stops after
// limit+1 bytes so the caller can tell a file that grew past limit. One
// allocation when the size is right.
func readBounded(r io.Reader, size, limit int64) ([]byte, error) {
	buf := make([]byte, 0, min(size, limit)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf, nil
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// firstInvalidUTF8 returns the offset of the first byte that does not start a
// valid UTF-8 sequence, or len(b) if there is none.
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// kindOf names a non-regular file type for error messages.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory; use the shell tool (tree, ls, rg --files) to list it"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// causeOf returns the innermost message of a path error (the caller names the
// path itself), else the error text.
func causeOf(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// splitLines splits text the way Rust's str::lines does, which is what the
// line numbers of read_file are defined by: split on "\n", drop a "\r" only
// directly before a "\n", and a final newline does not start an extra line.
// So "a\r\nb" has 2 lines, "a\r" has 1 line "a\r", "\n" has 1 empty line and
// "" has none.
func splitLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		line := s[:i]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		lines = append(lines, line)
		s = s[i+1:]
	}
	return lines
}

// toolError is a failure the model can act on. It reaches the client as a
// tools/call result with isError set and the message as its text, never as a
// JSON-RPC error, as MCP 2025-11-25 asks.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErrorf(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...)}
}
