package dispatch

import (
	"context"

	"buzzbox/agent"
	"buzzbox/cli"
	"buzzbox/devmcp"
	"buzzbox/dispatch/up"
	"buzzbox/harness"
	"buzzbox/internal/proc"
	"buzzbox/nostrgit"
	"buzzbox/relay"
	"buzzbox/shimtools/rg"
	"buzzbox/shimtools/tree"
)

// Identity is one tool the executable can become.
type Identity struct {
	// Name is what argv[0] (or the first argument to buzzbox) must be.
	Name string
	// Summary is the one line --help shows.
	Summary string
	// Sync marks short-lived identities that must start with no goroutines,
	// logging or network set-up of their own.
	Sync bool
	// Main runs the identity with args (the identity name excluded) and
	// returns the exit code.
	Main func(ctx context.Context, args []string, env proc.Env) int
}

// Identities returns the table of identities in a fixed order. It is built
// on each call so that package initialisation does no work.
func Identities() []Identity {
	ids := []Identity{
		{Name: "buzz-agent", Summary: "ACP agent on stdio: loops LLM -> MCP tool calls -> results", Main: agent.Main},
		{Name: "buzz-acp", Summary: "harness: turns relay events into prompts for ACP agents", Main: harness.Main},
		{Name: "buzz-dev-mcp", Summary: "MCP server for coding agents: shell, read_file, str_replace, view_image, todo", Main: devmcp.Main},
		{Name: "buzz-relay", Summary: "Nostr relay: embedded, persistent, authenticated, with channels", Main: relay.Main},
		{Name: "buzz", Summary: "command line for talking to the relay: messages, channels, reactions", Main: cli.Main},
		{Name: "rg", Summary: "recursive search, compatible with ripgrep", Sync: true, Main: rg.Main},
		{Name: "tree", Summary: "directory listing, compatible with GNU tree", Sync: true, Main: tree.Main},
		{Name: "git-credential-nostr", Summary: "git credential helper answering with NIP-98 tokens", Sync: true, Main: nostrgit.CredentialMain},
		{Name: "git-sign-nostr", Summary: "git signing program: commits signed by the Nostr key", Sync: true, Main: nostrgit.SignMain},
	}
	return ids
}

// Subcommand is something only buzzbox itself does: `buzzbox NAME`, never
// a link called NAME, so `buzzbox install` lays no link for it and a link
// of that name is no tool.
type Subcommand struct {
	// Identity is the subcommand as a tool: Name is the first argument to
	// buzzbox that selects it, exactly; Sync false gives it the embedded
	// CA roots; Main gets the arguments after its name.
	Identity
	// Args is what follows the name in --help's usage line.
	Args string
}

// Subcommands returns buzzbox's own subcommands in the order --help lists
// them, built on each call as Identities is.
func Subcommands() []Subcommand {
	return []Subcommand{
		{Identity{Name: "install", Summary: "lay one link per tool in DIR", Sync: true, Main: install}, "[--force] [--copy] DIR"},
		{Identity{Name: "up", Summary: "start a local workspace: relay, harness, agent", Main: up.Main}, "[--listen ADDRESS] [--public-url URL] [--dir DIR]"},
	}
}
