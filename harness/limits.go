package harness

import "time"

// Defaults and bounds of the command line (spec §2.2). Each names its flag.
const (
	defaultIdleTimeout      = 900 * time.Second  // --idle-timeout: 300 s over a 600 s shell call
	defaultMaxTurn          = 7200 * time.Second // --max-turn-duration: absolute turn deadline
	maxTurnCeiling          = 7 * 24 * time.Hour // --max-turn-duration beyond a week is a mistake
	zeroIdleTimeout         = time.Second        // --idle-timeout 0 becomes this (with a warning)
	zeroMaxTurn             = 60 * time.Second   // --max-turn-duration 0 becomes this
	minHeartbeat            = 10 * time.Second   // --heartbeat-interval: shorter would spin the agent
	maxHeartbeat            = 86400 * time.Second
	defaultTurnLiveness     = 10 * time.Second // --turn-liveness-secs
	minTurnLiveness         = 5 * time.Second
	maxAgents               = 32 // --agents: each is a process with its own model context
	defaultContextLimit     = 12 // --context-message-limit
	maxContextLimit         = 100
	maxBasePromptBytes      = 1 << 20 // --base-prompt-file: a prompt, not a corpus
	defaultEventBuffer      = 256     // BUZZ_ACP_EVENT_BUFFER: relay → harness events in flight
	maxSessionTitleChars    = 80      // --session-title after sanitising
	maxProfileLabelChars    = 64      // a display name in prompts
	maxRules                = 100     // rules in the TOML file
	maxFilterBytes          = 4096    // one filter expression
	maxRulesFileBytes       = 1 << 20 // the TOML rules file itself
	maxSystemPromptFile     = 1 << 20 // --system-prompt-file / --heartbeat-prompt-file
	filterEvalBudget        = 100 * time.Millisecond
	filterSlotWait          = 100 * time.Millisecond
	filterPoolSize          = 4 // concurrent filter evaluations
	filterTimeoutsToDisable = 5
)

// maxInactivitySecs bounds --exit-after-inactivity: a year idle is a
// forgotten process, and the bound keeps the seconds from overflowing a
// time.Duration.
const maxInactivitySecs = 365 * 24 * 3600

// maxEventBuffer bounds BUZZ_ACP_EVENT_BUFFER, relay events in flight to
// the harness: the buffer is allocated whole at start, so an unbounded
// value could exhaust memory before the first event.
const maxEventBuffer = 65536

// Queue and dispatch (spec §7).
const (
	maxQueuePerChannel = 500           // pending events per channel; beyond it the oldest is dropped
	maxBatch           = 50            // events folded into one prompt
	maxCatchupSecs     = 7 * 24 * 3600 // --catchup ceiling: a week of missed events is the most worth answering
	maxHandledIDs      = 512           // answered event ids kept per channel across restarts, for dedup
	retryBase          = 5 * time.Second
	retryCap           = 300 * time.Second
	maxRetries         = 10                // failed turns of one batch before it is dead-lettered
	inflightBackstop   = 100 * time.Second // past a turn's deadline its channel is released even if the turn never returned
	maintenanceTick    = 30 * time.Second
)

// Relay connection (spec §4); the relay client has the rest.
const (
	dialTimeout       = 30 * time.Second
	dedupGeneration   = 6000
	memberDedupGen    = 500
	writeTimeout      = 10 * time.Second
	httpTimeout       = 10 * time.Second
	contextFetchTO    = 3 * time.Second
	contextRetryDelay = 500 * time.Millisecond
	presenceEvery     = 60 * time.Second
	typingEvery       = 3 * time.Second
	reactionAddTO     = 500 * time.Millisecond
	reactionRemoveTO  = time.Second
	maxReactionsInFly = 10
)

// maxIdleBridgeConns is how many idle connections to the HTTP bridge are
// kept for reuse. net/http keeps two by default; reactions alone run
// maxReactionsInFly requests at once, so under load nearly every request
// dialled (and the relay accepted) a new connection.
const maxIdleBridgeConns = 2 * maxReactionsInFly

// ACP client (spec §9).
const (
	maxAgentLineBytes = 10 << 20         // one frame from the agent; beyond it the agent is torn down
	agentWriteTimeout = 30 * time.Second // one write to the agent's stdin; an agent that stops reading is torn down
	initTimeout       = 60 * time.Second
	requestTimeout    = 60 * time.Second
	configTimeout     = 5 * time.Second
	controlGrace      = 5 * time.Second
	timeoutDrain      = 30 * time.Second
	recentOutput      = 60 * time.Second // hard timeout requeues only if the agent spoke this recently
	killWait          = 5 * time.Second
	crashWindow       = 60 * time.Second
	crashesToOpen     = 3
	circuitOpenFor    = 300 * time.Second
	respawnBase       = time.Second
	respawnCap        = 30 * time.Second
	shutdownWait      = 30 * time.Second
	maxUsageSessions  = 256   // sessions whose latest usage report an agent keeps; the map is cleared when full
	maxModelBytes     = 256   // a model name in a usage report; a longer one is not recorded
	maxMetricBytes    = 65535 // one NIP-AM record: NIP-44 v2's plaintext limit
)

// Observer frames (spec §15, NIP-AO).
const (
	observerBufferCap    = 1000              // frames the in-process bus keeps; a publisher further behind loses the oldest (counted)
	observerPublishEvery = time.Second / 6   // ≈6 EVENTs/s: a burst of frames waits in the bus instead of tripping the relay's rate limit
	observerPerWindow    = 90                // EVENTs per observerWindow; beyond it frames are dropped (counted), never queued, so telemetry does not lag
	observerWindow       = time.Minute       // the window observerPerWindow counts over
	observerRawPerWindow = 60                // of observerPerWindow, what raw ACP traffic may use; the rest stays for lifecycle and turn frames
	observerMaxPlaintext = 65535             // one frame's JSON: NIP-44 v2's plaintext limit
	observerEventSlack   = 512               // bytes of a kind 24200 event besides its content (id, pubkey, sig, kind, created_at, three tags)
	observerRawMaxBytes  = 8 << 10           // one raw ACP line kept whole in a frame; a longer line keeps only observerRawHeadBytes
	observerRawHeadBytes = 512               // the head kept of an over-long raw ACP line
	observerLeafKeep     = 4096              // trimming starts by keeping this much of each end of an over-long string; it halves until the frame fits
	observerLeafMin      = 64                // below this, the payload is replaced by a note of its size instead
	observerControlSkew  = 300 * time.Second // a control frame's created_at may be this far from now either way; older ones are replays
	observerFlushWait    = 2 * time.Second   // shutdown waits this long for frames still in the bus to go out
)

// Failure notices and the reply guard.
const (
	maxNoticeCause  = 300              // runes of an agent's own error text quoted in a notice
	maxNoticeField  = 120              // runes of a model name or endpoint quoted in a notice
	minSecretLen    = 8                // shorter values of *_KEY/_TOKEN/… variables are not redacted (they would match ordinary words)
	maxFinalText    = 32 << 10         // bytes of a turn's final text kept for the reply guard; a longer text is cut with a note
	replyCheckTO    = 10 * time.Second // the reply guard's relay query and publish, each
	maxStderrTail   = 4 << 10          // bytes of an agent's stderr kept to quote when it fails to start
	stderrTailWait  = time.Second      // how long a failed start waits for the agent's stderr to end before quoting it
	firstWordNotice = 60 * time.Second // a prompt with no text, thought or tool call from the agent this long is told in the thread (still waiting)
	maxNoticeIDs    = 256              // notice ids remembered for the reply guard; cleared when full (a lost id can only keep the guard quiet once)
)
