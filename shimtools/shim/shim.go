// Package shim builds buzz-dev-mcp's session shim (devmcp.md §12): a private
// temp directory of links named rg, tree, buzz, git-credential-nostr and
// git-sign-nostr that all lead to this executable, the PATH and environment
// that put it first for every child, the Nostr key handed over in a 0600 key
// file instead of the environment, and the GIT_CONFIG_* entries that make
// git sign and authenticate with it.
//
// It starts no processes and keeps no goroutines. The caller owns the Shim
// and calls Close on exit, which removes the directory and the key file.
package shim

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
)

// Environment names, spelled as upstream.
const (
	envConfigCount = "GIT_CONFIG_COUNT"
)

// dirPrefix is the shim directory's name prefix (devmcp.md §12.1).
const dirPrefix = "buzz-dev-mcp-"

// KeyFileName is the key file inside the shim directory.
const KeyFileName = ".nostr-key"

// Names returns the identities linked into the shim directory.
func Names() []string {
	return []string{"rg", "tree", "buzz", "git-credential-nostr", "git-sign-nostr"}
}

// Shim is an installed shim directory. Its methods are safe for concurrent
// use; Close must be called once.
type Shim struct {
	dir     string
	path    string
	environ []string
	keyFile string
	pubHex  string
	npub    string
}

// Dir returns the shim directory.
func (s *Shim) Dir() string { return s.dir }

// PATH returns the PATH children get: the shim directory, then the
// original PATH.
func (s *Shim) PATH() string { return s.path }

// Environ returns the environment for children: the caller's environment
// without NOSTR_PRIVATE_KEY, with PATH prefixed by the shim directory and,
// when a key was given, the GIT_CONFIG_* entries of devmcp.md §12.4 and,
// unless BUZZ_PRIVATE_KEY or BUZZ_KEYFILE is set, BUZZ_KEYFILE naming the
// key file for the buzz CLI. The slice is a fresh copy on each call.
func (s *Shim) Environ() []string { return append([]string(nil), s.environ...) }

// KeyFile returns the key file's path, or "" when no usable key was given.
func (s *Shim) KeyFile() string { return s.keyFile }

// PublicKey returns the key's public half as hex and npub, or "" when none.
func (s *Shim) PublicKey() (hex, npub string) { return s.pubHex, s.npub }

// Close removes the shim directory, the key file included.
func (s *Shim) Close() error {
	if s == nil || s.dir == "" {
		return nil
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("buzz-dev-mcp: remove shim dir %s: %w", s.dir, err)
	}
	return nil
}

// New installs the shim for the process described by env: it creates the
// directory (mode 0700, in env.TempDir()), lays the links to env.Exe,
// takes NOSTR_PRIVATE_KEY out of the environment it hands on (always, even
// when the key is unusable), writes the key file and builds the git
// configuration. A key that cannot be used only disables git auth and
// signing, with a warning on env.Err(); other failures are errors and
// leave nothing behind.
func New(env proc.Env) (*Shim, error) {
	if env.Exe == "" {
		return nil, errors.New("buzz-dev-mcp: install shim: path of this executable unknown")
	}
	tmp, err := env.TempDir()
	if err != nil {
		return nil, fmt.Errorf("buzz-dev-mcp: install shim: %w", err)
	}
	dir, err := os.MkdirTemp(tmp, dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("buzz-dev-mcp: install shim: %w", err)
	}
	s := &Shim{dir: dir}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("buzz-dev-mcp: install shim: %w", err)
	}
	for _, name := range Names() {
		if err := link(env.Exe, dir, name); err != nil {
			return nil, fmt.Errorf("buzz-dev-mcp: install shim link %s: %w", name, err)
		}
	}
	s.path = dir
	if old := env.Getenv("PATH"); old != "" {
		s.path = dir + string(os.PathListSeparator) + old
	}

	raw, _ := env.LookupEnv(workspace.EnvNostrPrivateKey)
	environ := proc.Without(env.Environ, workspace.EnvNostrPrivateKey)
	environ = proc.WithEnv(environ, "PATH", s.path)
	if raw != "" {
		if git, err := s.installKey(raw, env); err != nil {
			fmt.Fprintf(env.Err(), "buzz-dev-mcp: warning: %v; git auth and commit signing are disabled\n", err)
		} else {
			environ = setGitConfig(environ, env, git)
			// The buzz CLI reads the key file when no key is in its
			// environment, so the key need not be in any.
			_, hasBuzzKey := env.LookupEnv(workspace.EnvPrivateKey)
			_, hasKeyFile := env.LookupEnv(workspace.EnvKeyFile)
			if !hasBuzzKey && !hasKeyFile {
				environ = proc.WithEnv(environ, workspace.EnvKeyFile, git.keyFile)
			}
		}
	}
	s.environ = environ
	ok = true
	return s, nil
}

// link makes dir/name lead to exe: a symlink, or a copy where symlinks are
// not possible (Windows without privilege, some file systems).
func link(exe, dir, name string) error {
	dst := filepath.Join(dir, name)
	if runtime.GOOS == "windows" {
		return CopyFile(exe, dst+".exe", 0o755)
	}
	if err := os.Symlink(exe, dst); err != nil {
		return CopyFile(exe, dst, 0o755)
	}
	return nil
}

// CopyFile copies the regular file src to dst, which it creates with
// permission bits perm and must not exist: a copy never replaces a file.
// The shim copies the executable where it cannot link it; `buzzbox up`
// copies its state across file systems.
func CopyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// gitIdentity is what the key yields for git.
type gitIdentity struct {
	pubHex, npub, keyFile string
}

// installKey parses raw and writes it, byte for byte, to the key file,
// created exclusively with mode 0600 so that it is never readable by
// others. The parsed key and the byte copy are wiped before returning; the
// environment string itself cannot be wiped in Go, but it is dropped from
// everything this process hands on.
func (s *Shim) installKey(raw string, env proc.Env) (gitIdentity, error) {
	buf := []byte(raw)
	defer clear(buf)
	sec, err := nostrkey.ParseSecretBytes(buf)
	if err != nil {
		return gitIdentity{}, fmt.Errorf("%s: %w", workspace.EnvNostrPrivateKey, err)
	}
	pub := sec.Public()
	sec.Zero()
	if !utf8.ValidString(s.dir) {
		return gitIdentity{}, errors.New("shim dir path is not UTF-8")
	}
	path := filepath.Join(s.dir, KeyFileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return gitIdentity{}, fmt.Errorf("write key file: %w", err)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		os.Remove(path)
		return gitIdentity{}, fmt.Errorf("write key file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return gitIdentity{}, fmt.Errorf("write key file %s: %w", path, err)
	}
	s.keyFile, s.pubHex, s.npub = path, pub.Hex(), pub.Npub()
	return gitIdentity{pubHex: s.pubHex, npub: s.npub, keyFile: path}, nil
}

// setGitConfig appends the ten GIT_CONFIG_KEY_n/VALUE_n pairs after any the
// caller already had and raises GIT_CONFIG_COUNT to match.
func setGitConfig(environ []string, env proc.Env, g gitIdentity) []string {
	base, err := strconv.Atoi(env.Getenv(envConfigCount))
	if err != nil || base < 0 {
		base = 0
	}
	name := DisplayName(env.Getenv(workspace.EnvDisplayName))
	if name == "" {
		name = g.npub
	}
	pairs := [][2]string{
		{"user.name", name},
		{"user.email", g.pubHex + "@" + EmailHost(env.Getenv(workspace.EnvRelayURL))},
		{"credential.helper", "nostr"},
		{"credential.useHttpPath", "true"},
		{"nostr.keyfile", g.keyFile},
		{"gpg.format", "x509"},
		{"gpg.x509.program", "git-sign-nostr"},
		{"commit.gpgSign", "true"},
		{"tag.gpgSign", "true"},
		{"user.signingkey", g.pubHex},
	}
	environ = proc.WithEnv(environ, envConfigCount, strconv.Itoa(base+len(pairs)))
	for i, p := range pairs {
		n := strconv.Itoa(base + i)
		environ = proc.WithEnv(environ, "GIT_CONFIG_KEY_"+n, p[0])
		environ = proc.WithEnv(environ, "GIT_CONFIG_VALUE_"+n, p[1])
	}
	return environ
}

// EmailHost derives the host of the git e-mail address from the relay URL
// (devmcp.md §12.3): one scheme prefix stripped, cut at the first '/' and
// then the first ':'; unset, empty or local relays give "buzz".
func EmailHost(relayURL string) string {
	h := relayURL
	for _, p := range []string{"https://", "http://", "wss://", "ws://"} {
		if strings.HasPrefix(h, p) {
			h = h[len(p):]
			break
		}
	}
	if i := strings.IndexByte(h, '/'); i >= 0 {
		h = h[:i]
	}
	if i := strings.IndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	if h == "" || strings.HasPrefix(h, "localhost") || strings.HasPrefix(h, "127.") {
		return "buzz"
	}
	return h
}

// DisplayName sanitises a display name for git's user.name (devmcp.md
// §12.3). It returns "" when nothing usable remains.
func DisplayName(s string) string {
	var words []string
	for _, w := range strings.FieldsFunc(s, unicode.IsSpace) {
		w = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || isFormat(r) || r == '<' || r == '>' {
				return -1
			}
			return r
		}, w)
		if w != "" {
			words = append(words, w)
		}
	}
	name := strings.Join(words, " ")
	if utf8.RuneCountInString(name) > maxNameRunes {
		n := 0
		for i := range name {
			if n == maxNameRunes {
				name = name[:i]
				break
			}
			n++
		}
	}
	name = strings.TrimRightFunc(name, unicode.IsSpace)
	for _, r := range name {
		if !isCrud(r) {
			return name
		}
	}
	return ""
}

// isCrud reports characters git strips from the ends of names.
func isCrud(r rune) bool {
	return r <= ' ' || strings.ContainsRune("\"',:;<>\\", r)
}

// formatRanges is the Unicode Cf set the spec lists (21 ranges; U+2065 is
// deliberately not included).
var formatRanges = [...][2]rune{
	{0x00AD, 0x00AD}, {0x0600, 0x0605}, {0x061C, 0x061C}, {0x06DD, 0x06DD}, {0x070F, 0x070F},
	{0x0890, 0x0891}, {0x08E2, 0x08E2}, {0x180E, 0x180E}, {0x200B, 0x200F}, {0x202A, 0x202E},
	{0x2060, 0x2064}, {0x2066, 0x206F}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB}, {0x110BD, 0x110BD},
	{0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
	{0xE0020, 0xE007F},
}

func isFormat(r rune) bool {
	for _, rg := range formatRanges {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}
