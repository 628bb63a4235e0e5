package devmcp

import (
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"strings"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
)

// Environment names of the key hand-over and the shell's scrubbing.
const (
	// envShellPassEnv lists, comma-separated, variables the shell gets
	// although their names look secret.
	envShellPassEnv = "BUZZ_SHELL_PASS_ENV"
)

// secretEnvPatterns are the names (path.Match patterns over the upper-cased
// name) a shell child does not inherit: provider keys, tokens, passwords
// and private keys of the server's environment are not the model's to read.
func secretEnvPatterns() []string {
	return []string{
		"*_API_KEY", "API_KEY", "*_APIKEY",
		"*_TOKEN", "TOKEN",
		"*SECRET*",
		"*PASSWORD*", "*PASSWD*",
		"*PRIVATE_KEY*",
		"*_ACCESS_KEY*",
		"*_CLIENT_KEY",
	}
}

// keptSecretNames match secretEnvPatterns but stay: BUZZ_PRIVATE_KEY is the
// agent's own key, which the buzz CLI in the shell needs (devmcp.md §4.4).
func keptSecretNames() []string { return []string{workspace.EnvPrivateKey} }

// secretName reports whether name matches secretEnvPatterns.
func secretName(name string) bool {
	up := strings.ToUpper(name)
	for _, p := range secretEnvPatterns() {
		if ok, _ := path.Match(p, up); ok {
			return true
		}
	}
	return false
}

// scrubEnv drops the variables whose names look secret from environ,
// except those named in pass and keptSecretNames. It returns the new
// environment and the names it dropped.
func scrubEnv(environ []string, pass string) (kept []string, dropped []string) {
	allow := keptSecretNames()
	for _, n := range strings.Split(pass, ",") {
		if n = strings.TrimSpace(n); n != "" {
			allow = append(allow, n)
		}
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if secretName(name) && !contains(allow, name) {
			dropped = append(dropped, name)
			continue
		}
		kept = append(kept, kv)
	}
	return kept, dropped
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// takeKeyFile reads the key NOSTR_PRIVATE_KEY_FILE names and returns env
// with the key as NOSTR_PRIVATE_KEY in env.Environ (a copy in this
// process's memory, not its environment block), the file's variable
// removed, and the directory holding the file, which the shell sandbox
// keeps unreadable. The file is left in place: it belongs to the parent.
// Without the variable env is returned as it is; a key given in the
// environment itself is logged at warn level, since /proc shows it.
func takeKeyFile(env proc.Env, log *slog.Logger) (proc.Env, string, error) {
	file, ok := env.LookupEnv(workspace.EnvNostrPrivateKeyFile)
	if !ok || file == "" {
		const msg = "key passed in the environment: it stays readable in /proc/<pid>/environ of this process to anyone allowed to trace it; hand it over as a 0600 file named by " + workspace.EnvNostrPrivateKeyFile + " instead"
		if v, ok := env.LookupEnv(workspace.EnvNostrPrivateKey); ok && v != "" {
			log.Warn(msg, "var", workspace.EnvNostrPrivateKey)
		}
		// BUZZ_PRIVATE_KEY is how the spec hands the buzz CLI its key, and
		// the shell sees it anyway: noted, not warned about.
		if v, ok := env.LookupEnv(workspace.EnvPrivateKey); ok && v != "" {
			log.Debug(msg, "var", workspace.EnvPrivateKey)
		}
		return env, "", nil
	}
	sk, err := nostrkey.ReadFile(file, nostrkey.FileRules{OwnerOnly: true, Warn: env.Stderr})
	if err != nil {
		return env, "", fmt.Errorf("read %s %s: %w", workspace.EnvNostrPrivateKeyFile, file, err)
	}
	defer sk.Zero()
	hex, err := sk.AppendHex(nil)
	if err != nil {
		return env, "", fmt.Errorf("read %s %s: %w", workspace.EnvNostrPrivateKeyFile, file, err)
	}
	out := env
	out.Environ = proc.Without(env.Environ, workspace.EnvNostrPrivateKeyFile, workspace.EnvNostrPrivateKey)
	out.Environ = append(out.Environ, workspace.EnvNostrPrivateKey+"="+string(hex))
	clear(hex)
	abs, err := filepath.Abs(file)
	if err != nil {
		return env, "", fmt.Errorf("read %s %s: %w", workspace.EnvNostrPrivateKeyFile, file, err)
	}
	return out, filepath.Dir(abs), nil
}
