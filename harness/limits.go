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
	dedupGeneration   = 6000
	memberDedupGen    = 500
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
	configTimeout  = 5 * time.Second
	recentOutput   = 60 * time.Second // hard timeout requeues only if the agent spoke this recently
	shutdownWait   = 30 * time.Second
	maxMetricBytes = 65535 // one NIP-AM record: NIP-44 v2's plaintext limit
)

// Failure notices and the reply guard.
const (
	maxNoticeCause = 300 // runes of an agent's own error text quoted in a notice
	// maxNotConfigured bounds the launcher's list of variables to set
	// (Config.NotConfigured) quoted in a notice: every provider's names fit.
	maxNotConfigured = 600
	maxNoticeField   = 120              // runes of a model name or endpoint quoted in a notice
	minSecretLen     = 8                // shorter values of *_KEY/_TOKEN/… variables are not redacted (they would match ordinary words)
	replyCheckTO     = 10 * time.Second // the reply guard's relay query and publish, each
	firstWordNotice  = 60 * time.Second // a prompt with no text, thought or tool call from the agent this long is told in the thread (still waiting)
	maxNoticeIDs     = 256              // notice ids remembered for the reply guard; cleared when full (a lost id can only keep the guard quiet once)
	maxSavedNotices  = 16               // notice ids kept per channel in the state file, newest: a restart must not take the last run's "could not answer yet" for an answer
)
