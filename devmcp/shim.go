package devmcp

import (
	"log/slog"

	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
	"buzzbox/shimtools/shim"
)

// shimSetup is what start-up step 3 (the session shim) yields.
type shimSetup struct {
	environ []string     // environment for shell children
	dir     string       // the shim dir; "" when none was installed
	close   func() error // removes the shim dir and key file
}

// installShim is start-up step 3: the session shim from shimtools/shim, a
// private temp dir of links named rg, tree, buzz, git-credential-nostr and
// git-sign-nostr put first on the children's PATH, the Nostr key moved
// from the environment to a 0600 key file, and the GIT_CONFIG_* identity.
// NOSTR_PRIVATE_KEY never reaches a child either way. When the path of
// this executable is unknown (the server run in-process) there is nothing
// to link, and children get the server's environment.
func installShim(env proc.Env, log *slog.Logger) (shimSetup, error) {
	if env.Exe == "" {
		log.Warn("session shim not installed: path of this executable unknown; shell children get the server's PATH")
		return shimSetup{environ: proc.Without(env.Environ, workspace.EnvNostrPrivateKey), close: func() error { return nil }}, nil
	}
	sh, err := shim.New(env)
	if err != nil {
		return shimSetup{}, err
	}
	log.Debug("session shim installed", "dir", sh.Dir())
	return shimSetup{environ: sh.Environ(), dir: sh.Dir(), close: sh.Close}, nil
}
