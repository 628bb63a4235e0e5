// Package harness is buzz-acp, the process that makes ACP agents members of
// a Buzz workspace.
//
// # Synopsis
//
//	buzz-acp [--relay-url ws://…] [--private-key KEY] [--agent-owner HEX]
//	         [--agent-command buzz-agent|goose|codex-acp|claude-agent-acp|PATH] [--agent-args a,b]
//	         [--mcp-command buzz-dev-mcp|PATH|""] [--subscribe mentions|all|config] [--config FILE]
//	         [--respond-to owner-only|allowlist|anyone|nobody] [--dedup queue|drop]
//	         [--multiple-event-handling queue|steer|interrupt|owner-interrupt] [--agents N] …
//	buzz-acp models|auth-methods [--json] [--agent-command …]
//	buzz-acp authenticate --method-id ID [--agent-command …]
//
// Every flag has an environment fallback (BUZZ_RELAY_URL, BUZZ_PRIVATE_KEY,
// BUZZ_ACP_*); `buzz-acp --help` lists them with their defaults.
//
// # Description
//
// The harness logs in to a Nostr relay (NIP-42), finds the channels the agent
// belongs to and subscribes to the events that should wake it. Each event is
// checked (signature, self, owner !commands, author gate, rules and the
// filter-expression language of package filter), queued per channel, batched
// and rendered into a sectioned prompt, then handed to an ACP v1 agent
// subprocess over stdio (JSON-RPC 2.0, one object per line). The agent
// answers through the `buzz` CLI or its MCP sidecar; the harness adds
// reactions (👀 queued, 💬 working), typing, presence and notices.
//
// Nobody who writes to the agent meets silence. A failed turn is told in
// the thread with its cause (failure.go words buzz-agent's acp.Failure
// data, or another agent's error code and message, with secret values cut
// out): at once and for good when retrying cannot cure it (a refused key,
// an unknown model), after the first failure when it can (no connection,
// a crash), and again when the retries give up. An agent that cannot start
// leaves the harness listening, answering each message with why. And a
// turn started by a mention or a DM that leaves no message of the agent's
// in the channel gets the agent's final session text posted for it
// (reply.go; --post-final-text=false restores upstream's silence).
//
// Reads go through the relay's HTTP bridge (POST /query, /count, /events with
// NIP-98) when its NIP-11 document offers one, otherwise over the websocket,
// so any NIP-01 relay works.
//
// By default the agent is this same executable run as buzz-agent, with this
// executable as the buzz-dev-mcp sidecar of every session.
//
// After a turn in which the agent reported token usage (goose's
// usage_update), the harness publishes a NIP-AM kind 44200 usage record
// encrypted to the owner. With --relay-observer and a known owner it also
// publishes NIP-AO observer frames (kind 24200: lifecycle, turn and raw ACP
// frames, encrypted to the owner, paced and capped) and takes the owner's
// cancel_turn and switch_model controls (harness/observer describes both). It
// does not implement the later upstream additions (effort level, wake
// tickets, last-mile publishing, usage from session/prompt responses,
// observer pacing at 1/s with gap reports).
//
// Main is buzz-acp itself. A harness runs in another identity's process
// through LoadConfig, Run and NewLogger: `buzzbox up` (package dispatch/up)
// does so.
package harness
