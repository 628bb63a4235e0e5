package workspace

// Environment names read by more than one identity or file, spelled as
// upstream spells them. Names read in one file only stay beside that
// reader (the flag tables of buzz-acp and buzz-agent).
const (
	// EnvRelayURL is the relay's websocket URL: buzz-acp's --relay-url,
	// the buzz CLI's relay, the session shim's and buzz-dev-mcp's media
	// reads.
	EnvRelayURL = "BUZZ_RELAY_URL"
	// EnvPrivateKey is the workspace key, hex or nsec: buzz-acp's agent
	// key, the buzz CLI's first key source after --private-key, the git
	// helpers' second.
	EnvPrivateKey = "BUZZ_PRIVATE_KEY"
	// EnvNostrPrivateKey is the git helpers' first key source
	// (nostrgit-cli.md §1.3); the session shim writes it to a key file and keeps it
	// from children.
	EnvNostrPrivateKey = "NOSTR_PRIVATE_KEY"
	// EnvNostrPrivateKeyFile names a 0600 file holding the key: how the
	// harness hands buzz-dev-mcp the agent key outside any environment.
	EnvNostrPrivateKeyFile = "NOSTR_PRIVATE_KEY_FILE"
	// EnvKeyFile names a 0600 key file, the buzz CLI's last key source.
	EnvKeyFile = "BUZZ_KEYFILE"
	// EnvAuthTag is a NIP-OA auth tag as JSON array text, by which the
	// agent key's owner vouches for it: relay AUTH, the bridge's
	// x-auth-tag header, published events, git pushes.
	EnvAuthTag = "BUZZ_AUTH_TAG"
	// EnvCLI is the path of the buzz CLI the base prompt points the agent
	// at when `buzz` is not on its PATH.
	EnvCLI = "BUZZ_CLI"
	// EnvDisplayName is the agent's display name, for git commits in the
	// session shim and forwarded to the MCP sidecar.
	EnvDisplayName = "BUZZ_ACP_DISPLAY_NAME"
	// EnvTimeoutSecs is the buzz CLI's per-command timeout in seconds.
	EnvTimeoutSecs = "BUZZ_TIMEOUT_SECS"
	// EnvConnectTimeoutSecs is the buzz CLI's relay connect timeout in
	// seconds.
	EnvConnectTimeoutSecs = "BUZZ_CONNECT_TIMEOUT_SECS"

	// EnvShellSandbox turns buzz-dev-mcp's shell sandbox on or off; the
	// agent's MCP client passes it through to its servers.
	EnvShellSandbox = "BUZZ_SHELL_SANDBOX"
	// EnvShellWriteDirs lists the extra directories buzz-dev-mcp's
	// sandboxed shell may write; passed through like EnvShellSandbox.
	EnvShellWriteDirs = "BUZZ_SHELL_WRITE_DIRS"

	// EnvAgentProvider is buzz-agent's LLM provider, which buzzbox up
	// checks before it starts anything.
	EnvAgentProvider = "BUZZ_AGENT_PROVIDER"
	// EnvAgentModel overrides the provider's model for buzz-agent.
	EnvAgentModel = "BUZZ_AGENT_MODEL"
	// EnvAgentStateDir is where buzz-agent keeps its sessions and its MCP
	// servers' OAuth tokens.
	EnvAgentStateDir = "BUZZ_AGENT_STATE_DIR"

	// EnvACPAgentCommand is buzz-acp's --agent-command: the ACP agent
	// program.
	EnvACPAgentCommand = "BUZZ_ACP_AGENT_COMMAND"
	// EnvACPAgentArgs is buzz-acp's --agent-args, comma-separated.
	EnvACPAgentArgs = "BUZZ_ACP_AGENT_ARGS"
	// EnvACPPrivateKey is the old name of EnvPrivateKey, read by buzz-acp
	// when that is unset.
	EnvACPPrivateKey = "BUZZ_ACP_PRIVATE_KEY"
	// EnvACPLogLevel is buzz-acp's log level: debug, info, warn or error.
	EnvACPLogLevel = "BUZZ_ACP_LOG_LEVEL"
	// EnvACPLogJSON, when set, makes buzz-acp log JSON lines.
	EnvACPLogJSON = "BUZZ_ACP_LOG_JSON"
	// EnvACPSetupPayload puts buzz-acp in set-up mode: no agent starts,
	// and mentions get a reply saying what to configure.
	EnvACPSetupPayload = "BUZZ_ACP_SETUP_PAYLOAD"
	// EnvACPEventBuffer is the capacity of buzz-acp's relay event channel.
	EnvACPEventBuffer = "BUZZ_ACP_EVENT_BUFFER"
)
