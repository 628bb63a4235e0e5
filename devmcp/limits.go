package devmcp

import "time"

// Protocol framing.
const (
	// maxLineBytes bounds one inbound MCP frame, newline included. The
	// largest argument is a data: URL of a 20 MiB image, about 27 MB of
	// base64; 48 MiB leaves room to answer a somewhat longer one with the
	// limit it broke. A longer frame is answered with -32600 and skipped.
	maxLineBytes = 48 << 20
)

// gcPercent is the garbage collector's target when GOGC is not set. The live
// heap is small (a few MiB) but each large tool result allocates several
// times its size; collecting at 5x the live heap instead of 2x halves the
// GC and page-return work per reply at the cost of a few MiB.
const gcPercent = 400

// shell tool.
const (
	// defaultShellTimeout applies when timeout_ms is absent.
	defaultShellTimeout = 120 * time.Second
	// maxShellTimeout is the silent clamp for timeout_ms; a runaway call
	// cannot hold a turn longer than this.
	maxShellTimeout = 600 * time.Second
	// maxCommandBytes bounds the command string handed to the shell.
	maxCommandBytes = 1_000_000
	// inlineMaxBytes: output above this many bytes is truncated to a tail
	// and spilled to an artifact, to keep the model's context small.
	inlineMaxBytes = 50 << 10
	// inlineMaxLines: output with more newlines than this is truncated too.
	inlineMaxLines = 2000
	// tailBytes is how much of the end of a truncated stream the model sees.
	tailBytes = 8 << 10
	// artifactRing is how many artifact files a session keeps; the oldest
	// is deleted when a newer one is written, bounding disk use.
	artifactRing = 8
	// maxArtifactBytes bounds one artifact file. The whole stream is kept up
	// to this size (a 1 GiB build log fits); beyond it bytes are counted and
	// dropped, so a runaway `yes` cannot fill the disk.
	maxArtifactBytes = 4 << 30
	// readChunk is one read from a child's pipe: the Linux pipe buffer size,
	// so one read drains a full pipe.
	readChunk = 64 << 10
	// killGrace is how long a process group gets between SIGTERM and
	// SIGKILL, polled (procgroup's groupPoll) so a group that exits early
	// is not waited for.
	killGrace = 200 * time.Millisecond
	// reapAfterKill bounds the wait for the shell to exit once its group
	// was sent SIGKILL.
	reapAfterKill = 2 * time.Second
	// reapAfterCancel bounds the wait for a cancelled call's shell to exit
	// after SIGKILL; the call ends either way.
	reapAfterCancel = time.Second
	// readerJoin bounds the wait for a stream to reach EOF after the shell
	// is gone; a descendant that left the group may hold the pipe forever.
	readerJoin = 5 * time.Second
	// progressInterval is how often a long shell call reports progress when
	// the client asked for it with a progressToken.
	progressInterval = time.Second
)

// Text files (read_file, str_replace).
const (
	// maxTextFileBytes bounds a file the text tools load into memory, and
	// the size str_replace may grow one to.
	maxTextFileBytes = 10 << 20
	// defaultReadLimit is read_file's line window when limit is absent.
	defaultReadLimit = 2000
	// maxEditArgBytes bounds old_str and new_str each.
	maxEditArgBytes = 1 << 20
	// maxDiffBytes bounds the diff str_replace returns; the rest is elided.
	maxDiffBytes = 64 << 10
	// diffContext is the number of unchanged lines around each hunk.
	diffContext = 3
	// myersMaxLines bounds the lines of one changed region given to the
	// Myers diff, whose memory grows with the square of the edit distance;
	// a larger region is shown as a plain delete-and-insert.
	myersMaxLines = 2000
	// hintScanLines is how many leading lines of a file the nearest-match
	// hint examines when old_str is not found.
	hintScanLines = 200
	// hintCompareBytes bounds each side of one similarity comparison.
	hintCompareBytes = 512
	// hintMinSimilarity: only lines more similar than this are suggested.
	hintMinSimilarity = 0.6
	// quoteOldStrChars is how much of old_str a not-found error quotes.
	quoteOldStrChars = 80
)

// view_image.
const (
	// maxImageSourceBytes bounds an image file, download or data: URL.
	maxImageSourceBytes = 20 << 20
	// maxImageOutBytes bounds the emitted image before base64: about 4 MiB
	// on the wire, under a 5 MiB provider limit.
	maxImageOutBytes = 3 << 20
	// maxImagePixels rejects decompression bombs from the header alone.
	maxImagePixels = 64 << 20
	// defaultImageDim is the longest edge sent when max_dim is absent.
	defaultImageDim = 1568
	// minImageDim and maxImageDim clamp max_dim.
	minImageDim = 64
	maxImageDim = 2048
	// imageFetchTimeout bounds connecting to and reading an image URL.
	imageFetchTimeout = 10 * time.Second
	// jpegQuality is used when a resized image without alpha is re-encoded.
	jpegQuality = 85
	// mediaTokenLifetime is the expiry of a relay media read token.
	mediaTokenLifetime = 600 * time.Second
)

// todo.
const (
	// maxTodoItems bounds the todo list.
	maxTodoItems = 50
	// maxTodoTextChars bounds one item's text, in Unicode scalar values.
	maxTodoTextChars = 200
)

// Workspace tools (send_message, add_reaction, read_thread).
const (
	// maxWorkspaceOutputBytes bounds what one buzz command may
	// hand back on each of stdout and stderr: a 500-reply thread of long
	// messages fits; the rest is counted and cut with a note.
	maxWorkspaceOutputBytes = 1 << 20
	// workspaceCommandTimeout bounds one buzz command: past the CLI's own
	// worst case (three attempts of a 15 s connect and a 30 s request,
	// with retry-after waits of up to 30 s between them), so only a
	// wedged child meets it.
	workspaceCommandTimeout = 5 * time.Minute
	// workspaceStopGrace is how long a buzz command asked to stop (the
	// tool call cancelled, or the timeout) may take before it is killed.
	workspaceStopGrace = 2 * time.Second
)
