package nostrkey

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// FileRules selects the optional key-file checks. The zero value applies the
// rules every reader shares: a regular file, not readable or writable by
// group or others (0600 or 0400), at most 1024 bytes, holding one key.
type FileRules struct {
	// NoSymlink refuses a path whose last element is a symlink (the signer's
	// rule). False follows symlinks.
	NoSymlink bool
	// OwnerOnly refuses a file not owned by the current user (the signer's
	// rule). False accepts any owner.
	OwnerOnly bool
	// Warn receives a one-line warning when the platform cannot check
	// permissions. Nil discards it.
	Warn io.Writer
}

// FileError reports a key file that cannot be used. Its text never holds
// key material; Fix, when set, is the command that repairs it.
type FileError struct {
	Path    string
	Problem string // what is wrong, e.g. "has insecure permissions 0644 (expected 0600)"
	Fix     string // a command to run, e.g. "chmod 600 PATH"; empty if none
	Err     error  // the underlying cause, if any
}

func (e *FileError) Error() string {
	msg := "keyfile " + e.Path + " " + e.Problem
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Fix != "" {
		msg += "; fix: " + e.Fix
	}
	return msg
}

func (e *FileError) Unwrap() error { return e.Err }

// ReadFile reads and parses the key in the file at path under the rules of
// the nostrgit spec §1.4. The read buffer is wiped before returning.
func ReadFile(path string, rules FileRules) (*Secret, error) {
	f, err := openKeyFile(path, rules)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &FileError{Path: path, Problem: "cannot be inspected", Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, &FileError{Path: path, Problem: fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type())}
	}
	if err := checkOwnerAndMode(path, fi, rules); err != nil {
		return nil, err
	}
	if fi.Size() > maxKeyFileBytes {
		return nil, &FileError{Path: path, Problem: fmt.Sprintf("is %d bytes, larger than the %d-byte limit for a key file", fi.Size(), maxKeyFileBytes)}
	}
	var buf [maxKeyFileBytes + 1]byte
	defer clear(buf[:])
	n, err := io.ReadFull(f, buf[:])
	switch {
	case err == io.ErrUnexpectedEOF || err == io.EOF:
	case err != nil:
		return nil, &FileError{Path: path, Problem: "cannot be read", Err: err}
	default: // grew past the cap while we read
		return nil, &FileError{Path: path, Problem: fmt.Sprintf("is larger than the %d-byte limit for a key file", maxKeyFileBytes)}
	}
	s, err := ParseSecretBytes(buf[:n])
	if err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			return nil, &KeyError{Source: "keyfile " + path, Reason: ke.Reason}
		}
		return nil, err
	}
	return s, nil
}

// WriteFile creates path exclusively with mode 0600 from the start (no
// moment where others may read it) and writes s as hex plus a newline. It
// fails if path exists.
func WriteFile(path string, s *Secret) error {
	buf, err := s.AppendHex(make([]byte, 0, 65))
	if err != nil {
		return fmt.Errorf("nostrkey: write keyfile %s: %w", path, err)
	}
	defer clear(buf)
	buf = append(buf, '\n')
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("nostrkey: write keyfile: %w", err)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("nostrkey: write keyfile %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("nostrkey: write keyfile %s: %w", path, err)
	}
	return nil
}
