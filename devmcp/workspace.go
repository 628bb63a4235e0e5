package devmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"buzzbox/internal/mcp"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/procgroup"
	"buzzbox/internal/workspace"
)

// The workspace tools: send_message, add_reaction and read_thread. Some
// agents' sandboxes strip BUZZ_* and *_KEY variables or reset PATH before
// a model-written command runs, and then `buzz messages send` in the shell
// cannot sign or cannot be found. These tools run the same buzz commands
// as children of this server (this executable started as buzz, or
// BUZZ_CLI), with the relay, key and auth tag this server was started
// with, so the events are exactly the CLI's and nothing depends on the
// shell. The key reaches the child as a 0600 file in a directory the
// shell sandbox hides, never in its environment or on its command line.
// They are offered only when both a relay URL and a key are configured.

// workspacePassEnv are the variables of this server's environment a buzz
// command gets as they are: its timeouts, temp dir, TLS roots and proxies,
// as the CLI reads them from the process it runs in.
func workspacePassEnv() []string {
	return []string{workspace.EnvAuthTag, workspace.EnvTimeoutSecs, workspace.EnvConnectTimeoutSecs, "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR",
		"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"}
}

// workspaceKeyPrefix names the directory holding the buzz commands' key
// file; it begins as every name the shell sandbox hides in the temp dir
// does (hiddenTempPrefixes).
const workspaceKeyPrefix = "buzz-dev-mcp-workspace-"

// workspaceTools is what the workspace tools sign and send with. The zero
// value (no relay or no key) offers no tools.
type workspaceTools struct {
	// environ is the whole environment of one buzz command: relay URL,
	// key file, auth tag, timeouts. Nil when not configured.
	environ []string
	// cli runs the buzz CLI: BUZZ_CLI, else this executable.
	cli string
	// argv0 is the child's argv[0], which selects the buzz identity.
	argv0 string
	// keyDir holds the key file; close removes it.
	keyDir string
}

// newWorkspace reads the relay URL, the key (BUZZ_PRIVATE_KEY, else the
// NOSTR_PRIVATE_KEY the shim's key file holds; the order a `buzz` in the
// shell would find them) and BUZZ_AUTH_TAG from env, and writes the key
// to a 0600 file in a new 0700 directory under tmp. Anything missing, or
// no way to run buzz, leaves the tools unconfigured: they could only fail.
func newWorkspace(env proc.Env, tmp string, log *slog.Logger) workspaceTools {
	relay := strings.TrimSpace(env.Getenv(workspace.EnvRelayURL))
	key := env.Getenv(workspace.EnvPrivateKey)
	if key == "" {
		key = env.Getenv(workspace.EnvNostrPrivateKey)
	}
	if relay == "" {
		return workspaceTools{}
	}
	sk, err := nostrkey.ParseSecret(key)
	if err != nil {
		return workspaceTools{} // no key, or one the CLI would refuse: the tools could only fail
	}
	defer sk.Zero()
	w := workspaceTools{cli: env.Exe, argv0: "buzz"}
	if p, ok := env.LookupEnv(workspace.EnvCLI); ok && filepath.IsAbs(p) {
		w.cli, w.argv0 = p, p
	}
	if w.cli == "" {
		log.Warn("workspace tools not offered: path of this executable unknown and " + workspace.EnvCLI + " unset")
		return workspaceTools{}
	}
	dir, err := os.MkdirTemp(tmp, workspaceKeyPrefix)
	if err == nil {
		err = os.Chmod(dir, 0o700)
	}
	if err == nil {
		err = nostrkey.WriteFile(filepath.Join(dir, "key"), sk)
	}
	if err != nil {
		if dir != "" {
			os.RemoveAll(dir)
		}
		log.Warn("workspace tools not offered: write their key file", "err", err)
		return workspaceTools{}
	}
	w.keyDir = dir
	w.environ = []string{workspace.EnvRelayURL + "=" + relay, workspace.EnvKeyFile + "=" + filepath.Join(dir, "key")}
	for _, name := range workspacePassEnv() {
		if v, ok := env.LookupEnv(name); ok && v != "" {
			w.environ = append(w.environ, name+"="+v)
		}
	}
	return w
}

func (w workspaceTools) configured() bool { return w.environ != nil }

// close removes the key file.
func (w workspaceTools) close() error {
	if w.keyDir == "" {
		return nil
	}
	return os.RemoveAll(w.keyDir)
}

// workspaceNote ends the instructions when the workspace tools are offered.
const workspaceNote = "To reply, react or read a thread, prefer the send_message, add_reaction and read_thread tools: they sign with your key and need no shell."

// cappedOutput keeps the first max bytes written to it and counts the rest.
type cappedOutput struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

// Write always reports all of p written, so that the writer's user does
// not stop at a short write.
func (b *cappedOutput) Write(p []byte) (int, error) {
	keep := min(len(p), max(b.max-b.buf.Len(), 0))
	b.buf.Write(p[:keep])
	b.dropped += len(p) - keep
	return len(p), nil
}

// String is what was kept, with a note when bytes were dropped.
func (b *cappedOutput) String() string {
	s := b.buf.String()
	if b.dropped > 0 {
		s += "\n[output cut: " + strconv.Itoa(b.dropped) + " more bytes]"
	}
	return s
}

// runBuzz runs one buzz command as a child with stdin as its standard
// input, for at most workspaceCommandTimeout. Exit 0 returns its JSON
// answer as the result; any other exit, the CLI's own error object
// (category, message, retryable) as an isError result, which tells the
// model what was wrong and what to do.
func (s *Server) runBuzz(ctx context.Context, stdin string, args ...string) (*mcp.CallToolResult, error) {
	out := &cappedOutput{max: maxWorkspaceOutputBytes}
	errOut := &cappedOutput{max: maxWorkspaceOutputBytes}
	cctx, cancel := context.WithTimeout(ctx, workspaceCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, s.ws.cli, args...)
	cmd.Args[0] = s.ws.argv0
	cmd.Env = s.ws.environ
	cmd.Dir = s.cwd
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = out, errOut
	// Asked to stop, the CLI gets SIGTERM and workspaceStopGrace to
	// finish before it is killed.
	procgroup.Bound(cmd, workspaceStopGrace)
	name := "buzz " + args[0] + " " + args[1]
	if err := proc.Start(cmd); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.log.Warn("workspace command did not start", "command", name, "err", err)
		return nil, &toolError{msg: name + ": start " + s.ws.cli + ": " + err.Error()}
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if cctx.Err() != nil {
		s.log.Warn("workspace command timed out", "command", name, "after", workspaceCommandTimeout)
		return nil, &toolError{msg: name + " did not finish within " + workspaceCommandTimeout.String() + "; the relay may be unreachable: try again later"}
	}
	code := cmd.ProcessState.ExitCode()
	if err != nil && code == 0 {
		code = -1 // the output could not be read to the end
	}
	if code != 0 {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = name + " failed with exit code " + strconv.Itoa(code)
		}
		s.log.Info("workspace command failed", "command", args[0]+" "+args[1], "code", code)
		return nil, &toolError{msg: msg}
	}
	return textResult(strings.TrimSpace(out.String())), nil
}

type sendMessageArgs struct {
	Channel  *string  `json:"channel"`
	Content  *string  `json:"content"`
	ReplyTo  string   `json:"reply_to"`
	Mentions []string `json:"mentions"`
}

// sendMessage is the send_message tool: `buzz messages send`.
func (s *Server) sendMessage(ctx context.Context, _ *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a sendMessageArgs
	if err := decodeArgs(raw, &a, true); err != nil {
		return nil, err
	}
	if a.Channel == nil || a.Content == nil {
		return nil, toolErrorf("invalid arguments: channel and content are required")
	}
	args := []string{"messages", "send", "--channel=" + *a.Channel, "--content=-"}
	if a.ReplyTo != "" {
		args = append(args, "--reply-to="+a.ReplyTo)
	}
	for _, m := range a.Mentions {
		args = append(args, "--mention="+m)
	}
	return s.runBuzz(ctx, *a.Content, args...)
}

type addReactionArgs struct {
	Event *string `json:"event"`
	Emoji *string `json:"emoji"`
}

// addReaction is the add_reaction tool: `buzz reactions add`.
func (s *Server) addReaction(ctx context.Context, _ *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a addReactionArgs
	if err := decodeArgs(raw, &a, true); err != nil {
		return nil, err
	}
	if a.Event == nil || a.Emoji == nil {
		return nil, toolErrorf("invalid arguments: event and emoji are required")
	}
	return s.runBuzz(ctx, "", "reactions", "add", "--event="+*a.Event, "--emoji="+*a.Emoji)
}

type readThreadArgs struct {
	Channel *string `json:"channel"`
	Event   *string `json:"event"`
	Limit   *int64  `json:"limit"`
}

// readThread is the read_thread tool: `buzz messages thread`.
func (s *Server) readThread(ctx context.Context, _ *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a readThreadArgs
	if err := decodeArgs(raw, &a, true); err != nil {
		return nil, err
	}
	if a.Channel == nil || a.Event == nil {
		return nil, toolErrorf("invalid arguments: channel and event are required")
	}
	args := []string{"messages", "thread", "--channel=" + *a.Channel, "--event=" + *a.Event}
	if a.Limit != nil {
		args = append(args, "--limit="+strconv.FormatInt(*a.Limit, 10))
	}
	return s.runBuzz(ctx, "", args...)
}

// workspaceTools are the tools above, listed only when s.ws is configured.
func (s *Server) workspaceTools() []tool {
	if !s.ws.configured() {
		return nil
	}
	return []tool{
		{
			name: "add_reaction",
			description: "React to a workspace event with an emoji, signed with your key: what `buzz reactions add --event <id> --emoji <emoji>` does, without the shell. " +
				"The answer is the CLI's JSON (the reaction's event id).",
			inputSchema: `{"type":"object","properties":{` +
				`"event":{"type":"string","description":"Id (64 hex characters) of the event to react to."},` +
				`"emoji":{"type":"string","description":"The emoji, e.g. 👍 (at most 64 characters)."}` +
				`},"required":["event","emoji"],"additionalProperties":false}`,
			openWorld: true,
			run:       s.addReaction,
		},
		{
			name: "read_thread",
			description: "Read a whole thread of a channel, its root and replies oldest first: what `buzz messages thread --channel <uuid> --event <id>` does, without the shell. " +
				"event may be any event of the thread. The answer is the CLI's JSON array of messages.",
			inputSchema: `{"type":"object","properties":{` +
				`"channel":{"type":"string","description":"Channel id (a UUID)."},` +
				`"event":{"type":"string","description":"Id (64 hex characters) of any event of the thread."},` +
				`"limit":{"type":"integer","minimum":0,"description":"Most replies to return (default 100, at most 500)."}` +
				`},"required":["channel","event"],"additionalProperties":false}`,
			readOnly:  true,
			openWorld: true,
			run:       s.readThread,
		},
		{
			name: "send_message",
			description: "Post a message to a workspace channel, signed with your key: what `buzz messages send` does, without the shell, so it works even where commands run without BUZZ_* variables. " +
				"Give reply_to (an event id) to answer in that event's thread, which is how to reply to the event your turn is about. " +
				"To notify people, write @ and their exact display name in content and list their pubkeys in mentions; they must be channel members. " +
				"The answer is the CLI's JSON: the new event's id and the mention_pubkeys actually signed.",
			inputSchema: `{"type":"object","properties":{` +
				`"channel":{"type":"string","description":"Channel id (a UUID)."},` +
				`"content":{"type":"string","description":"Message text (GitHub-flavoured Markdown), with real newlines."},` +
				`"reply_to":{"type":"string","description":"Id (64 hex characters) of the event to reply to, in its thread."},` +
				`"mentions":{"type":"array","maxItems":50,"items":{"type":"string"},"description":"Pubkeys (hex or npub) of the people to notify."}` +
				`},"required":["channel","content"],"additionalProperties":false}`,
			openWorld: true,
			run:       s.sendMessage,
		},
	}
}
