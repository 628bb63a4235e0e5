package agent

import "time"

// Fixed limits (spec names in parentheses). Knob-driven defaults are in
// options.go next to the variable that overrides them.
const (
	maxPromptBytes       = 1 << 20   // one user prompt after joining its blocks (MAX_PROMPT_BYTES)
	maxSystemPromptBytes = 512 << 10 // system prompt plus hints (MAX_SYSTEM_PROMPT_BYTES)
	maxToolResultBytes   = 8 << 20   // one tool result, text and images together (MAX_TOOL_RESULT_BYTES)
	maxToolCallsPerTurn  = 64        // tool calls run per model response; extras are dropped (MAX_TOOL_CALLS_PER_TURN)
	maxHookResultBytes   = 16 << 10  // one hook's text (MAX_HOOK_RESULT_BYTES)
	markerFieldCap       = 256       // mime/uri quoted inside an elision marker
	elisionAllowance     = 128       // bytes reserved for the middle-elision marker
	maxHintsBytes        = 128 << 10 // all AGENTS.md files together (MAX_HINTS_BYTES)
	maxSkillBodyBytes    = 32 << 10  // load_skill output (MAX_SKILL_BODY_BYTES)
	maxReplyNags         = 2         // reply-guard reminders per prompt (MAX_REPLY_NAGS)
	imageContextBytes    = 16384     // context-pressure charge of one image (IMAGE_CONTEXT_TOKEN_EQUIV)
	maxPromptImages      = 8         // image blocks in one prompt: the harness sends at most 4

	handoffOriginalTaskMaxBytes = 16 << 10 // original task quoted in a summary request
	handoffMaxToolNames         = 20       // tool names listed in a summary request
	handoffOutputTokens         = 8192     // summary output cap (HANDOFF_MAX_OUTPUT_TOKENS)

	maxContextRecoveries = 3       // forced handoffs per turn after context-window errors (MAX_CONTEXT_RECOVERIES_PER_RUN)
	minRecoveryBudget    = 4 << 10 // history quoted in a recovery summary never shrinks below this (HANDOFF_MIN_PROMPT_BUDGET_BYTES)

	maxSkillDirs     = 256       // skill subdirectories examined per skills dir
	maxSkillFiles    = 512       // supporting files enumerated per skill
	maxSkillMDBytes  = 256 << 10 // SKILL.md bytes read
	maxSkillFileRead = 1 << 20   // supporting file bytes read before capping

	stateSlackBytes   = 1 << 20 // state file room for its header and JSON framing beyond history and prompts
	maxListedSessions = 1000    // state files read for one session/list; older ones beyond are not listed
	listPageSize      = 100     // sessions per session/list page
	maxTitleBytes     = 120     // a session's title in session/list (its first prompt's first line)
	maxKeptSessions   = 256     // state files kept; the oldest beyond are removed when a session is made
)

// Durations.
const (
	keepaliveEvery = 30 * time.Second // keepalive updates while waiting for the model
	cancelDrain    = 5 * time.Second  // in-flight tool calls get this long to stop after a cancel
)

// protocolVersion is the ACP version answered: the client's if lower, else
// ours. The agent speaks ACP v1 and v2 (v2.go).
const protocolVersion = 2

// minRedactLen is the shortest API key cut out of error messages; a
// shorter one would match ordinary words.
const minRedactLen = 8
