package devmcp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// sessionDirPrefix names the per-process temp dir that holds artifacts.
const sessionDirPrefix = "buzz-dev-mcp-session-"

// session is the server's scratch space: the temp dir, the shell call
// counter and the artifact ring. It is shared by concurrent shell calls.
type session struct {
	dir string

	mu        sync.Mutex
	calls     int      // completed shell calls so far
	ring      []string // artifact names in artifacts, oldest first
	artifacts *heldDir // artifacts/, held open once made
}

func newSession(tempRoot string) (*session, error) {
	dir, err := os.MkdirTemp(tempRoot, sessionDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create session dir in %s: %w", tempRoot, err)
	}
	return &session{dir: dir}, nil
}

// artifactsDir returns <session>/artifacts, made on first use and held
// open from then on. Commands may write the session dir, so the dir is
// opened with no symlink followed and artifacts are written relative to
// it: a symlink planted at its name fails the spill (until it is gone)
// rather than sending command output outside the places commands write.
func (s *session) artifactsDir() (*heldDir, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.artifacts != nil {
		return s.artifacts, nil
	}
	// The session dir's own parent, the temp dir, is not the shell's to
	// change, so resolving it here is safe.
	dir, err := filepath.EvalSymlinks(s.dir)
	if err != nil {
		return nil, err
	}
	d := filepath.Join(dir, "artifacts")
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	h, err := openHeldDir(d)
	if err != nil {
		return nil, fmt.Errorf("%w (the name is not a plain directory)", err)
	}
	s.artifacts = h
	return h, nil
}

// artifactPath is the path the model is given for an artifact name.
func (s *session) artifactPath(name string) string {
	return filepath.Join(s.dir, "artifacts", name)
}

// nextCall allocates the id of a completed shell call, counting from 1.
func (s *session) nextCall() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.calls
}

// keep adds an artifact (a name in d, the artifacts dir) to the ring and
// deletes the oldest ones beyond artifactRing.
func (s *session) keep(d *heldDir, name string) {
	s.mu.Lock()
	s.ring = append(s.ring, name)
	var drop []string
	for len(s.ring) > artifactRing {
		drop = append(drop, s.ring[0])
		s.ring = s.ring[1:]
	}
	s.mu.Unlock()
	for _, n := range drop {
		d.remove(n)
	}
}

// close removes the session dir and everything in it.
func (s *session) close() error {
	s.mu.Lock()
	if s.artifacts != nil {
		s.artifacts.close()
		s.artifacts = nil
	}
	s.mu.Unlock()
	return os.RemoveAll(s.dir)
}
