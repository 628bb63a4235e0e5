// Package devmcp is buzz-dev-mcp, the developer-tools MCP server a coding
// agent mounts to work on a repository.
//
// Synopsis:
//
//	buzz-dev-mcp
//
// Description:
//
// The server speaks MCP over stdin and stdout, one JSON-RPC message per line,
// until stdin reaches EOF (or SIGHUP, SIGINT, SIGTERM, SIGQUIT); diagnostics go to stderr
// through log/slog and nothing but protocol frames goes to stdout. It is
// dual-era: the legacy lifecycle (initialize with protocol versions
// 2024-11-05 through 2025-11-25, negotiated with a counter-offer, then
// notifications/initialized and ping) and the stateless 2026-07-28 era
// (server/discover, per-request _meta, resultType, ttlMs and cacheScope on
// cacheable results, -32022 for an unsupported version).
//
// Tools: shell (one short-lived process per call in its own process group,
// output capped to a tail for the model with the whole stream in an
// artifact file, timeouts and notifications/cancelled killing the whole
// group, progress notifications on request), read_file (numbered line
// windows of UTF-8 text), str_replace (exact, atomic single-file edits with
// a unified diff; an empty old_str creates a new file), view_image (PNG,
// JPEG, GIF and WebP from a path, http(s) or data: URL, shrunk to fit),
// todo, and the host hooks _Stop and _PostCompact. Failures the model can
// fix are tool results with isError; JSON-RPC errors are kept for unknown
// tools, malformed requests and server faults. A malformed, non-UTF-8 or
// over-long frame is answered and the server keeps serving.
//
// Start-up records the working directory, installs the session shim
// (package shimtools/shim: links named rg, tree, buzz and the git helpers
// first on the children's PATH, the Nostr key in a 0600 file, git's
// identity), creates the session temp dir, resolves the shell once and
// builds the instructions. Both temp dirs are removed on exit.
//
// Options: none. The environment: BUZZ_SHELL picks the shell;
// BUZZ_DEV_MCP_LOG sets the log level (debug, info, warn, error) and
// BUZZ_DEV_MCP_LOG_FORMAT=json switches the log to JSON; BUZZ_RELAY_URL and
// BUZZ_PRIVATE_KEY enable the relay hint and signed reads of the relay's
// /media/ URLs; NOSTR_PRIVATE_KEY (or the 0600 file NOSTR_PRIVATE_KEY_FILE
// names, which keeps the key out of this process's environment) is moved
// into the shim's key file and never reaches a child. Shell children get
// no variable whose name looks secret (secretEnvPatterns) unless
// BUZZ_SHELL_PASS_ENV names it.
//
// The shell sandbox (BUZZ_SHELL_SANDBOX=landlock, the default where the
// kernel has Landlock; off): each command starts through this executable's
// hidden --sandbox-exec entry, which applies a Landlock ruleset and execs
// the shell. Commands write only the working tree, a private $TMPDIR in
// the session dir, the user's cache dirs and BUZZ_SHELL_WRITE_DIRS; they
// read everything else except buzzbox's state root, the dir of a
// handed-over key file, the owner's credentials under $HOME and other
// sessions' dirs in the temp dir; they run in PID, mount and UTS
// namespaces of their own (a user other than root in a user namespace
// too, set up by a second entry, --user-ns), so no other process's /proc
// files are in reach and nothing a command starts outlives the shell;
// where the namespaces are refused, a child subreaper entry (--reap)
// kills what the command detached instead. They keep no capability and
// run with no_new_privs. The processes holding secrets are non-dumpable.
//
// What it does not do: the file tools are not sandboxed (they accept any
// path the server can reach; only shell commands are confined), it
// keeps no shell state between calls, it offers no resources, prompts,
// logging or list-change notifications, and it does not accept JSON-RPC
// batches. It serves stdio only; Streamable HTTP is not implemented.
package devmcp
