package devmcp

import (
	"context"
	"encoding/json"

	"buzzbox/internal/mcp"
)

// handlerFunc runs one tool call. A *toolError becomes an isError result;
// jsonrpc.ErrNoReply (a cancelled call) sends nothing; any other error is a
// server fault, answered as a JSON-RPC internal error.
type handlerFunc func(ctx context.Context, c *call, args json.RawMessage) (*mcp.CallToolResult, error)

// tool is one entry of tools/list.
type tool struct {
	name         string
	description  string
	inputSchema  string // JSON Schema object
	outputSchema string // JSON Schema object, or "" for none
	readOnly     bool   // annotation readOnlyHint
	destructive  bool   // annotation destructiveHint (meaningful when not read-only)
	idempotent   bool   // annotation idempotentHint
	openWorld    bool   // annotation openWorldHint
	run          handlerFunc
}

// tools returns the server's tools sorted by name, the order tools/list
// has always used. Tools whose name starts with "_" are host hooks that
// agents hide from the model.
func (s *Server) tools() []tool {
	return []tool{
		{
			name:        "_PostCompact",
			description: "Host hook, not for the model: returns the todo list (\"# Todo List\" and the items) for re-injection after the context was compacted or handed off; empty when the list is empty. Takes no arguments.",
			inputSchema: `{"type":"object","properties":{},"additionalProperties":false}`,
			readOnly:    true,
			run:         s.postCompactHook,
		},
		{
			name:        "_Stop",
			description: "Host hook, not for the model: called before the agent ends its turn. Returns an objection listing the open todo items while any remain, else an empty text. Takes no arguments.",
			inputSchema: `{"type":"object","properties":{},"additionalProperties":false}`,
			readOnly:    true,
			run:         s.stopHook,
		},
		{
			name: "read_file",
			description: "Read a UTF-8 text file as numbered lines, \"<n>:<text>\", with a header giving the range and the total line count. " +
				"offset is the 0-based line to start at (default 0) and limit the number of lines (default 2000); when lines remain, a footer gives the exact offset to pass next. " +
				"path is absolute or relative to workdir (default: the server's working directory). Files over 10 MiB, binary files and invalid UTF-8 are refused. " +
				"Prefer this over cat, head, tail or sed -n in the shell.",
			inputSchema: `{"type":"object","properties":{` +
				`"path":{"type":"string","description":"File to read: absolute, or relative to workdir."},` +
				`"offset":{"type":"integer","minimum":0,"description":"0-based index of the first line to show (default 0)."},` +
				`"limit":{"type":"integer","minimum":0,"description":"Maximum number of lines to show (default 2000)."},` +
				`"workdir":{"type":"string","description":"Directory relative paths start from (default: the server's working directory)."}` +
				`},"required":["path"]}`,
			readOnly: true,
			run:      s.readFile,
		},
		{
			name: "shell",
			description: "Run one command in " + s.sh.name + " (BUZZ_SHELL picks another shell) as a fresh, short-lived process: cd and export do not carry over, so pass workdir instead. stdin is empty. " +
				"The result is JSON with exit_code, stdout, stderr, timed_out, duration_ms and notes. A stream over 50 KiB or 2000 lines is cut to its last 8 KiB, " +
				"with *_truncated set and the full output saved to the file named by *_artifact (read it with read_file or rg). " +
				"timeout_ms defaults to 120000 and is capped at 600000; ask for 300000 or more for builds (cargo build, go build), test suites and git push with hooks. " +
				"On timeout the whole process group is killed and exit_code is 124. Background jobs do not outlive the call. " +
				"On PATH: rg (prefer it over grep: -n, -i, -l, -g <glob>, -C <n>, --files), tree (-d <depth>; prints line counts), buzz (relay CLI; buzz --help)." +
				s.sandboxDescription(),
			inputSchema: `{"type":"object","properties":{` +
				`"command":{"type":"string","description":"Command line, passed verbatim to the shell."},` +
				`"workdir":{"type":"string","description":"Directory to run in (default: the server's working directory)."},` +
				`"timeout_ms":{"type":"integer","minimum":0,"description":"Milliseconds before the command is killed (default 120000, max 600000)."}` +
				`},"required":["command"]}`,
			outputSchema: shellOutputSchema,
			destructive:  true,
			openWorld:    true,
			run:          s.shell,
		},
		{
			name: "str_replace",
			description: "Edit one file: replace old_str, which must occur exactly once, by new_str (set replace_all to replace every occurrence). " +
				"The file is rewritten atomically, keeping its permissions, and the answer is a unified diff. " +
				"If old_str is not found the error shows the nearest matching line; if it occurs more than once, include more surrounding lines. " +
				"An empty old_str creates a new file holding new_str (the path must not exist; its directory must). " +
				"path is absolute or relative to workdir. Prefer this over sed, awk or shell redirection.",
			inputSchema: `{"type":"object","properties":{` +
				`"path":{"type":"string","description":"File to edit: absolute, or relative to workdir."},` +
				`"old_str":{"type":"string","description":"Exact text to replace, whitespace included; empty to create a new file."},` +
				`"new_str":{"type":"string","description":"Replacement text."},` +
				`"replace_all":{"type":"boolean","description":"Replace every occurrence instead of requiring exactly one (default false)."},` +
				`"workdir":{"type":"string","description":"Directory relative paths start from (default: the server's working directory)."}` +
				`},"required":["path","old_str","new_str"]}`,
			destructive: true,
			run:         s.strReplace,
		},
		{
			name: "todo",
			description: "Keep a todo list for work that must survive across turns or a context handoff. Call with no arguments to read it; " +
				"send todos, the complete new list of {text, done} items (at most 50, text up to 200 characters), to replace it. " +
				"Removing an unfinished item draws a warning: mark items done instead. While items are open, ending the turn may be discouraged.",
			inputSchema: `{"type":"object","properties":{` +
				`"todos":{"type":"array","maxItems":50,"description":"The complete new list; omit to read the current one.","items":{"type":"object","properties":{` +
				`"text":{"type":"string","minLength":1,"maxLength":200},` +
				`"done":{"type":"boolean","default":false}` +
				`},"required":["text"],"additionalProperties":false}}` +
				`},"additionalProperties":false}`,
			idempotent: true,
			run:        s.todo,
		},
		{
			name: "view_image",
			description: "Look at an image: a file path (absolute or relative to workdir), an http(s) URL or a data:image/...;base64 URL. " +
				"PNG, JPEG, GIF and WebP are accepted; animated images are refused (ask for a still frame). " +
				"Images whose longest edge exceeds max_dim (default 1568, clamped to 64..2048) or that are over 3 MiB are scaled down and sent as PNG (with transparency) or JPEG. " +
				"Sources over 20 MiB are refused.",
			inputSchema: `{"type":"object","properties":{` +
				`"source":{"type":"string","description":"File path, http(s) URL, or data: URL with base64 image data."},` +
				`"max_dim":{"type":"integer","minimum":0,"description":"Longest edge in pixels of the image sent (default 1568, clamped to 64..2048)."},` +
				`"workdir":{"type":"string","description":"Directory relative paths start from (default: the server's working directory)."}` +
				`},"required":["source"]}`,
			readOnly:  true,
			openWorld: true,
			run:       s.viewImage,
		},
	}
}

// shellOutputSchema describes shellResult, the shell tool's structuredContent.
const shellOutputSchema = `{"type":"object","properties":{` +
	`"duration_ms":{"type":"integer"},` +
	`"exit_code":{"type":"integer","description":"Exit status; 124 on timeout; -1 when killed by a signal."},` +
	`"notes":{"type":"array","items":{"type":"string"}},` +
	`"stderr":{"type":"string"},` +
	`"stderr_artifact":{"type":"string","description":"File with the whole stream; present only when stderr was truncated and saved."},` +
	`"stderr_truncated":{"type":"boolean"},` +
	`"stdout":{"type":"string"},` +
	`"stdout_artifact":{"type":"string","description":"File with the whole stream; present only when stdout was truncated and saved."},` +
	`"stdout_truncated":{"type":"boolean"},` +
	`"timed_out":{"type":"boolean"}` +
	`},"required":["duration_ms","exit_code","notes","stderr","stderr_truncated","stdout","stdout_truncated","timed_out"]}`

// entry renders t as a tools/list entry for a client speaking version:
// annotations from 2025-03-26, outputSchema from 2025-06-18.
func (t *tool) entry(version string) mcp.Tool {
	out := mcp.Tool{Name: t.name, Description: t.description, InputSchema: json.RawMessage(t.inputSchema)}
	if version >= mcp.Version20250326 {
		out.Annotations = &mcp.ToolAnnotations{
			ReadOnlyHint:    hint(t.readOnly),
			DestructiveHint: hint(t.destructive && !t.readOnly),
			IdempotentHint:  hint(t.idempotent || t.readOnly),
			OpenWorldHint:   hint(t.openWorld),
		}
	}
	if version >= mcp.Version20250618 && t.outputSchema != "" {
		out.OutputSchema = json.RawMessage(t.outputSchema)
	}
	return out
}

// hint is an annotation hint, always sent explicitly.
func hint(b bool) *bool { return &b }
