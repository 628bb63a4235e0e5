package nostrkey

import (
	"errors"
	"fmt"

	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
)

// ErrNoKey is returned when no source holds a key. Callers print their own
// spec-mandated message for it.
var ErrNoKey = errors.New("no nostr key configured")

// Loaded is a key and where it came from.
type Loaded struct {
	// Secret is the key; the caller wipes it with Zero when done.
	Secret *Secret
	// Source names the winning source: an env var name, "--private-key" or
	// "keyfile PATH". Never the key.
	Source string
	// Warnings are lines (without newline, starting "warning:") the caller
	// should print on stderr. Nil when there is nothing to say.
	Warnings []string
}

// ForGit loads the key for git-credential-nostr and git-sign-nostr, in the
// order of the spec §1.3: NOSTR_PRIVATE_KEY (non-empty), BUZZ_PRIVATE_KEY
// (non-empty), then the file nostr.keyfile names. keyfile is called only
// when both variables are empty; it returns the configured path, "" when
// unset, or an error which is returned as is. An env value longer than 128
// bytes is an error. When both variables are set and differ,
// NOSTR_PRIVATE_KEY wins with a warning.
func ForGit(env proc.Env, keyfile func() (string, error), rules FileRules) (Loaded, error) {
	nostrVal, buzzVal := env.Getenv(workspace.EnvNostrPrivateKey), env.Getenv(workspace.EnvPrivateKey)
	for _, v := range []struct{ name, val string }{{workspace.EnvNostrPrivateKey, nostrVal}, {workspace.EnvPrivateKey, buzzVal}} {
		if len(v.val) > maxEnvKeyBytes {
			return Loaded{}, fmt.Errorf("%s exceeds %d-byte size limit", v.name, maxEnvKeyBytes)
		}
	}
	if nostrVal != "" {
		s, err := parseFrom(workspace.EnvNostrPrivateKey, nostrVal)
		if err != nil {
			return Loaded{}, err
		}
		l := Loaded{Secret: s, Source: workspace.EnvNostrPrivateKey}
		if buzzVal != "" {
			other, err := ParseSecret(buzzVal)
			if err != nil || !other.Equal(s) {
				l.Warnings = append(l.Warnings, "warning: "+workspace.EnvNostrPrivateKey+" and "+workspace.EnvPrivateKey+" are both set and differ; using "+workspace.EnvNostrPrivateKey)
			}
			other.Zero()
		}
		return l, nil
	}
	if buzzVal != "" {
		s, err := parseFrom(workspace.EnvPrivateKey, buzzVal)
		if err != nil {
			return Loaded{}, err
		}
		return Loaded{Secret: s, Source: workspace.EnvPrivateKey}, nil
	}
	if keyfile == nil {
		return Loaded{}, ErrNoKey
	}
	path, err := keyfile()
	if err != nil {
		return Loaded{}, err
	}
	if path == "" {
		return Loaded{}, ErrNoKey
	}
	s, err := ReadFile(path, rules)
	if err != nil {
		return Loaded{}, err
	}
	return Loaded{Secret: s, Source: "keyfile " + path}, nil
}

// ForCLI loads the key for the buzz CLI, in the order of the spec §1.3 and
// §6.1: the --private-key flag value (non-empty), BUZZ_PRIVATE_KEY
// (non-empty), then the file BUZZ_KEYFILE names. NOSTR_PRIVATE_KEY is not
// read.
func ForCLI(env proc.Env, flag string) (Loaded, error) {
	if flag != "" {
		s, err := parseFrom("--private-key", flag)
		if err != nil {
			return Loaded{}, err
		}
		return Loaded{Secret: s, Source: "--private-key"}, nil
	}
	if v := env.Getenv(workspace.EnvPrivateKey); v != "" {
		if len(v) > maxEnvKeyBytes {
			return Loaded{}, fmt.Errorf("%s exceeds %d-byte size limit", workspace.EnvPrivateKey, maxEnvKeyBytes)
		}
		s, err := parseFrom(workspace.EnvPrivateKey, v)
		if err != nil {
			return Loaded{}, err
		}
		return Loaded{Secret: s, Source: workspace.EnvPrivateKey}, nil
	}
	if path := env.Getenv(workspace.EnvKeyFile); path != "" {
		s, err := ReadFile(path, FileRules{Warn: env.Stderr})
		if err != nil {
			return Loaded{}, err
		}
		return Loaded{Secret: s, Source: "keyfile " + path}, nil
	}
	return Loaded{}, ErrNoKey
}

func parseFrom(source, v string) (*Secret, error) {
	s, err := ParseSecret(v)
	if err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			return nil, &KeyError{Source: source, Reason: ke.Reason}
		}
		return nil, err
	}
	return s, nil
}
