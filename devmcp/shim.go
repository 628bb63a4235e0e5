package devmcp

import (
	"log/slog"

	"buzzbox/internal/proc"
)

// shimSetup is what start-up step 3 (the session shim) yields.
type shimSetup struct {
	environ []string     // environment for shell children
	close   func() error // removes the shim dir
}

// installShim is start-up step 3: the session shim (a temp dir of links
// named rg, tree, buzz, git-credential-nostr and git-sign-nostr put first on
// the children's PATH, the key file and the GIT_CONFIG_* identity) comes from
// package shimtools. Until it is wired in, children get the server's
// environment. Either way NOSTR_PRIVATE_KEY never reaches a child.
func installShim(env proc.Env, log *slog.Logger) (shimSetup, error) {
	log.Debug("session shim not installed; shell children get the server's PATH")
	return shimSetup{
		environ: proc.Without(env.Environ, envNostrKey),
		close:   func() error { return nil },
	}, nil
}
