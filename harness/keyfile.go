package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/statedir"
)

// keyHandoverDir is where, under buzzbox's state root, a harness leaves
// the agent key for its sidecars: outside every working tree, and hidden
// from buzz-dev-mcp's sandboxed shell with the rest of the state root.
const keyHandoverDir = "acp/keys"

// writeMCPKeyFile writes the agent key for the sidecar (buzz-dev-mcp reads
// NOSTR_PRIVATE_KEY_FILE) into the state root, 0600 in a 0700 dir, so the
// key need not ride in the sidecar's environment, which /proc/PID/environ
// shows for the process's whole life. The name carries the harness's pid:
// two harnesses of one agent each remove only their own file.
func writeMCPKeyFile(getenv func(string) string, sk *nostrkey.Secret) (string, error) {
	root, err := statedir.Root(getenv)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, keyHandoverDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("buzz-acp: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, sk.Public().Hex()+"-"+strconv.Itoa(os.Getpid())+".key")
	os.Remove(path) // a file left by an earlier process of this pid
	if err := nostrkey.WriteFile(path, sk); err != nil {
		return "", fmt.Errorf("buzz-acp: %w", err)
	}
	return path, nil
}
