package nostrgit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nipoa"
)

// Git config keys the helpers read (spec §1.5), as git prints them.
const (
	configKeyFile    = "nostr.keyfile"
	configSigningKey = "user.signingkey"
)

// configPattern selects every key the helpers may need, so one child answers
// them all: each git start costs milliseconds, and signing sits on the
// commit path.
const configPattern = `^(nostr\.keyfile|nostr\.authtag|user\.signingkey)$`

// gitConfig is a lazily taken snapshot of the keys above. The zero value is
// not usable; make one with newGitConfig.
type gitConfig struct {
	ctx  context.Context
	env  proc.Env
	done bool
	vals map[string]string
	err  error
}

func newGitConfig(ctx context.Context, env proc.Env) *gitConfig {
	return &gitConfig{ctx: ctx, env: env}
}

// get returns the value of key (the last one, as `git config --get` does)
// and whether it is set. A value the environment sets through
// GIT_CONFIG_COUNT (how the session host configures git) is taken from
// there, since git ranks it above every file; otherwise the first call runs
// git.
func (c *gitConfig) get(key string) (string, bool, error) {
	if v, ok := envConfig(c.env, key); ok {
		return v, true, nil
	}
	if !c.done {
		c.vals, c.err = readGitConfig(c.ctx, c.env)
		c.done = true
	}
	if c.err != nil {
		return "", false, c.err
	}
	v, ok := c.vals[key]
	return v, ok, nil
}

// envConfig returns key's value from GIT_CONFIG_COUNT/KEY_n/VALUE_n when
// that is certainly what git would answer: the last matching entry, with
// "~/" expanded for nostr.keyfile as --type=path would. It declines (false)
// when GIT_CONFIG_PARAMETERS (git -c, which outranks these entries) or
// GIT_CONFIG is set, when the count is malformed, or when the key is not
// among the entries, and then git is asked.
func envConfig(env proc.Env, key string) (string, bool) {
	if env.Getenv("GIT_CONFIG_PARAMETERS") != "" || env.Getenv("GIT_CONFIG") != "" {
		return "", false
	}
	count := env.Getenv("GIT_CONFIG_COUNT")
	if count == "" {
		return "", false
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 0 || n > maxEnvConfigEntries {
		return "", false
	}
	val, found := "", false
	for i := range n {
		k, ok := env.LookupEnv("GIT_CONFIG_KEY_" + strconv.Itoa(i))
		if !ok {
			return "", false // git refuses such an environment; let it say so
		}
		if strings.EqualFold(k, key) {
			val, found = env.Getenv("GIT_CONFIG_VALUE_"+strconv.Itoa(i)), true
		}
	}
	if !found {
		return "", false
	}
	if key == configKeyFile && strings.HasPrefix(val, "~") {
		rest, ok := strings.CutPrefix(val, "~/")
		home := env.Getenv("HOME")
		if !ok || home == "" {
			return "", false // ~user or no HOME: git knows best
		}
		val = filepath.Join(home, rest)
	}
	return val, true
}

// readGitConfig runs `git config -z --type=path --get-regexp` as a child in
// env's directory and environment minus the key variables (spec §1.3: the
// child MUST NOT see them). Exit 1 means none is set. More than
// maxConfigBytes of output kills the child and counts as unset (spec).
// --type=path expands "~/" in nostr.keyfile and leaves the other values,
// which never start with "~", alone.
func readGitConfig(ctx context.Context, env proc.Env) (map[string]string, error) {
	git, err := lookGit(env)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, git, "config", "-z", "--type=path", "--get-regexp", configPattern)
	cmd.Env = proc.Without(env.Environ, workspace.EnvNostrPrivateKey, workspace.EnvPrivateKey)
	cmd.Dir = env.Dir
	// Only an *os.File is handed over as is; any other writer would make
	// os/exec start a copying goroutine, which a sync helper must not.
	if f, ok := env.Stderr.(*os.File); ok {
		cmd.Stderr = f
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("git config: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git config: %w", err)
	}
	buf, readErr := io.ReadAll(io.LimitReader(out, maxConfigBytes+1))
	if len(buf) > maxConfigBytes {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, nil
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("git config --get-regexp %s: %w", configPattern, err)
	case readErr != nil:
		return nil, fmt.Errorf("git config: read output: %w", readErr)
	}
	vals := map[string]string{}
	for _, rec := range bytes.Split(buf, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		k, v, _ := bytes.Cut(rec, []byte("\n"))
		vals[strings.ToLower(string(k))] = string(v) // later entries win
	}
	return vals, nil
}

// lookGit finds git on env's PATH, falling back to the process's own.
func lookGit(env proc.Env) (string, error) {
	for _, dir := range filepath.SplitList(env.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "git")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("git not found on PATH: %w", err)
	}
	return p, nil
}

// keyFile returns the nostr.keyfile path for nostrkey.ForGit.
func (c *gitConfig) keyFile() (string, error) {
	v, ok, err := c.get(configKeyFile)
	if err != nil || !ok {
		return "", err
	}
	if v != "" && !filepath.IsAbs(v) && c.env.Dir != "" {
		v = filepath.Join(c.env.Dir, v)
	}
	return v, nil
}

// authTag returns the configured NIP-OA tag text and its source:
// BUZZ_AUTH_TAG when non-empty, else nostr.authtag. "" means none.
func (c *gitConfig) authTag() (raw, source string, err error) {
	if v := c.env.Getenv(workspace.EnvAuthTag); v != "" {
		return v, workspace.EnvAuthTag, nil
	}
	v, ok, err := c.get(nipoa.GitConfigAuthTag)
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", nipoa.GitConfigAuthTag, err)
	}
	if !ok {
		return "", "", nil
	}
	return v, nipoa.GitConfigAuthTag, nil
}
