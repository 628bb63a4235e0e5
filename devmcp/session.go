package devmcp

import (
	"fmt"
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

	mu      sync.Mutex
	calls   int      // completed shell calls so far
	ring    []string // artifact paths, oldest first
	madeDir bool     // artifacts/ exists
}

func newSession(tempRoot string) (*session, error) {
	dir, err := os.MkdirTemp(tempRoot, sessionDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create session dir in %s: %w", tempRoot, err)
	}
	return &session{dir: dir}, nil
}

// artifactsDir returns <session>/artifacts, creating it on first use.
func (s *session) artifactsDir() (string, error) {
	d := filepath.Join(s.dir, "artifacts")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.madeDir {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", err
		}
		s.madeDir = true
	}
	return d, nil
}

// nextCall allocates the id of a completed shell call, counting from 1.
func (s *session) nextCall() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.calls
}

// keep adds an artifact to the ring and deletes the oldest ones beyond
// artifactRing.
func (s *session) keep(path string) {
	s.mu.Lock()
	s.ring = append(s.ring, path)
	var drop []string
	for len(s.ring) > artifactRing {
		drop = append(drop, s.ring[0])
		s.ring = s.ring[1:]
	}
	s.mu.Unlock()
	for _, p := range drop {
		os.Remove(p)
	}
}

// close removes the session dir and everything in it.
func (s *session) close() error { return os.RemoveAll(s.dir) }
