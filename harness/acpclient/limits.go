package acpclient

import "time"

// ACP client bounds (spec §9).
const (
	agentWriteTimeout  = 30 * time.Second // one write to the agent's stdin; an agent that stops reading is torn down
	initTimeout        = 60 * time.Second // initialize, which may include an agent's own start-up work
	controlGrace       = 5 * time.Second  // a turn cancelled by a control signal gets this long to drain
	timeoutDrain       = 30 * time.Second // an idle or hard-capped turn gets this long to drain after session/cancel
	maxUsageSessions   = 256              // sessions whose latest usage report an agent keeps; the map is cleared when full
	maxUsageModelBytes = 256              // a model name in a usage report; a longer one is not recorded
	maxFinalText       = 32 << 10         // bytes of a turn's final text kept for the reply guard; a longer text is cut with a note
	maxStderrTail      = 4 << 10          // bytes of an agent's stderr kept to quote when it fails to start
	maxStderrQuote     = 300              // runes of that stderr's last line quoted in the start error
	stderrTailWait     = time.Second      // how long a failed start waits for the agent's stderr to end before quoting it
)

// MaxLineBytes bounds one frame from the agent; beyond it the agent is
// torn down (Spec.MaxLine overrides it).
const MaxLineBytes = 10 << 20

// RequestTimeout bounds one request to the agent other than initialize and
// session/prompt (session/new, session/load, steering, session/close).
const RequestTimeout = 60 * time.Second

// The stop ladder of an agent (Kill): after its stdin closes the agent gets
// stdinGrace to exit on its own, then termGrace after SIGTERM to its
// group; after SIGKILL, killWait bounds the wait for it to be reaped.
const (
	stdinGrace = 2 * time.Second
	termGrace  = time.Second
	killWait   = 5 * time.Second
)
