package harness

import (
	"slices"
	"strings"

	"buzzbox/harness/acpclient"
	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
)

// agentSpecFor resolves the configured command: the bare name buzz-agent
// runs this executable under that name.
func agentSpecFor(c *Config, env proc.Env, version string) acpclient.Spec {
	s := acpclient.Spec{Path: c.AgentCommand, Argv0: c.AgentCommand, Args: c.AgentArgs, Dir: env.Dir,
		Stderr: env.Err(), Version: version}
	if c.AgentCommand == "buzz-agent" && env.Exe != "" {
		s.Path = env.Exe
	}
	if c.AgentIdentity == "codex" || c.AgentIdentity == "codex-acp" {
		s.Args = codexNetworkArgs(s.Args)
	}
	environ := append([]string(nil), env.Environ...)
	// The agent's own buzz CLI reads these; flags given to the harness
	// reach it too (the parent's environment wins when it has them).
	if _, ok := env.LookupEnv(workspace.EnvRelayURL); !ok && c.RelayURL != "" {
		environ = append(environ, workspace.EnvRelayURL+"="+c.RelayURL)
	}
	// buzz-agent's shell is the sidecar's, which reads the key from
	// MCPKeyFile; other agents run the buzz CLI in shells of their own.
	keyInFile := c.MCPKeyFile != "" && c.AgentCommand == "buzz-agent"
	if keyInFile {
		// Nor may it inherit the harness's own copy, which buzz-agent would
		// pass on to its MCP servers' environments.
		environ = withoutEnv(environ, workspace.EnvPrivateKey, workspace.EnvNostrPrivateKey)
	}
	if _, ok := env.LookupEnv(workspace.EnvPrivateKey); !ok && c.Secret != nil && !keyInFile {
		if sk, err := c.Secret.AppendHex(nil); err == nil {
			environ = append(environ, workspace.EnvPrivateKey+"="+string(sk))
		}
	}
	for _, kv := range c.AgentEnv {
		k, v, _ := strings.Cut(kv, "=")
		environ = proc.WithEnv(environ, k, v)
	}
	s.Env = environ
	return s
}

// withoutEnv returns environ without the variables named.
func withoutEnv(environ []string, names ...string) []string {
	out := environ[:0:0]
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}

// codexNetworkOverride lets commands in codex's workspace-write sandbox
// reach the network, so the agent's buzz CLI can reach the relay. codex-acp
// 0.16 does not read CODEX_CONFIG (which the spec sets too); it takes the
// same setting as a -c override.
const codexNetworkOverride = "sandbox_workspace_write.network_access=true"

func codexNetworkArgs(args []string) []string {
	for _, a := range args {
		if strings.Contains(a, "network_access") {
			return args
		}
	}
	return append(append([]string{}, args...), "-c", codexNetworkOverride)
}
