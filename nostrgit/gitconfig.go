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

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
)

// Git config keys the helpers read (spec §1.5).
const (
	configKeyFile    = "nostr.keyfile"
	configSigningKey = "user.signingkey"
)

// gitConfig reads one value with `git config --get` run as a child of the
// helper, in env's directory and environment minus the key variables (spec
// §1.3: the child MUST NOT see them). It returns ok=false when the key is
// unset (git exits 1) or when git printed more than maxConfigBytes (the
// child is then killed and the value treated as unset). Other failures are
// errors. asPath asks git to expand "~/" in the value.
func gitConfig(ctx context.Context, env proc.Env, key string, asPath bool) (string, bool, error) {
	git, err := lookGit(env)
	if err != nil {
		return "", false, err
	}
	args := []string{"config"}
	if asPath {
		args = append(args, "--type=path")
	}
	args = append(args, "--get", key)
	cmd := exec.CommandContext(ctx, git, args...)
	cmd.Env = proc.Without(env.Environ, nostrkey.EnvNostrKey, nostrkey.EnvBuzzKey)
	cmd.Dir = env.Dir
	// Only an *os.File is handed over as is; any other writer would make
	// os/exec start a copying goroutine, which a sync helper must not.
	if f, ok := env.Stderr.(*os.File); ok {
		cmd.Stderr = f
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", false, fmt.Errorf("git config --get %s: %w", key, err)
	}
	if err := cmd.Start(); err != nil {
		return "", false, fmt.Errorf("git config --get %s: %w", key, err)
	}
	buf, readErr := io.ReadAll(io.LimitReader(out, maxConfigBytes+1))
	if len(buf) > maxConfigBytes {
		cmd.Process.Kill()
		cmd.Wait()
		return "", false, nil
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("git config --get %s: %w", key, err)
	case readErr != nil:
		return "", false, fmt.Errorf("git config --get %s: read output: %w", key, readErr)
	}
	return string(bytes.TrimRight(buf, "\r\n")), true, nil
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

// keyFileFromConfig returns the nostr.keyfile path for nostrkey.ForGit.
func keyFileFromConfig(ctx context.Context, env proc.Env) func() (string, error) {
	return func() (string, error) {
		v, ok, err := gitConfig(ctx, env, configKeyFile, true)
		if err != nil || !ok {
			return "", err
		}
		if v != "" && !filepath.IsAbs(v) && env.Dir != "" {
			v = filepath.Join(env.Dir, v)
		}
		return v, nil
	}
}
