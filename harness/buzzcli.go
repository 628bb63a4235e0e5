package harness

import (
	"log/slog"
	"os"
	"path/filepath"

	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
)

// buzzCLI returns an absolute path that runs this executable as buzz, and
// a func that removes what was made for it. The parent's BUZZ_CLI wins;
// else a `buzz` next to the executable that is the same file; else a link
// named buzz in a new temporary directory (the name selects the identity);
// "" when none can be had, and the agent then has only PATH.
// BUZZ_CLI (workspace.EnvCLI) carries it in the agent's environment: an
// agent's shell may reset PATH (codex-acp runs commands in a login shell,
// and a login shell on Debian takes PATH from /etc/profile), so `buzz` on
// PATH is not enough; the base prompt tells the agent to run "$BUZZ_CLI"
// when `buzz` is not found.
func buzzCLI(env proc.Env, log *slog.Logger) (string, func()) {
	nothing := func() {}
	if p, ok := env.LookupEnv(workspace.EnvCLI); ok && filepath.IsAbs(p) {
		return p, nothing
	}
	exe := env.Exe
	if exe == "" || !filepath.IsAbs(exe) {
		return "", nothing
	}
	if filepath.Base(exe) == "buzz" {
		return exe, nothing
	}
	self, err := os.Stat(exe)
	if err != nil {
		return "", nothing
	}
	if fi, err := os.Stat(filepath.Join(filepath.Dir(exe), "buzz")); err == nil && os.SameFile(fi, self) {
		return filepath.Join(filepath.Dir(exe), "buzz"), nothing
	}
	dir, err := os.MkdirTemp("", "buzz-acp-cli-")
	if err != nil {
		log.Warn("no absolute buzz path for the agent", "err", err)
		return "", nothing
	}
	link := filepath.Join(dir, "buzz")
	if err := os.Symlink(exe, link); err != nil {
		os.RemoveAll(dir)
		log.Warn("no absolute buzz path for the agent", "err", err)
		return "", nothing
	}
	// The directory must be searchable by the agent's sandboxed shell.
	os.Chmod(dir, 0o755)
	return link, func() { os.RemoveAll(dir) }
}
