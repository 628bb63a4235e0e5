package llm

import "time"

// maxResponseBytes bounds a whole reply body, streamed or not, so a runaway
// or hostile endpoint cannot exhaust memory (MAX_LLM_RESPONSE_BYTES).
const maxResponseBytes = 16 << 20

// maxErrorBodyBytes bounds how much of a non-2xx body is read and quoted in
// the error (MAX_LLM_ERROR_BODY_BYTES).
const maxErrorBodyBytes = 4 << 10

// maxAttempts is how many times one request is sent before giving up on a
// retryable failure (MAX_RETRIES).
const maxAttempts = 3

// retryBase is the first backoff; it doubles per attempt up to retryCap, and
// the actual delay is uniform in [base/2, base).
const (
	retryBase = 500 * time.Millisecond
	retryCap  = 8 * time.Second
)

// retryAfterCap clamps an OpenRouter Retry-After, since that sleep happens
// outside the inactivity timeout (RETRY_AFTER_CAP_SECS).
const retryAfterCap = 60 * time.Second

// defaultMaxCallTime bounds one call's wall-clock time when
// Config.MaxCallTime is zero: an endpoint that drips deltas or keep-alives
// must not hold a turn forever (BUZZ_AGENT_LLM_MAX_CALL_SECS).
const defaultMaxCallTime = 600 * time.Second

// connectTimeout bounds the TCP (and TLS) connect of one attempt.
const connectTimeout = 10 * time.Second

// stallNotice is the cumulative retry time after which a warning is logged.
const stallNotice = 300 * time.Second

// SummaryMaxTokens is the output cap of a handoff summary request
// (HANDOFF_MAX_OUTPUT_TOKENS).
const SummaryMaxTokens = 8192

// maxStreamBlocks bounds content blocks (or tool-call indexes) tracked in one
// streamed reply, so a hostile index cannot make the assembler allocate.
const maxStreamBlocks = 1024

// Connection reuse: concurrent sessions share keep-alive connections to
// the provider; idle ones are dropped after idleConnTimeout.
const (
	maxIdlePerHost  = 16
	idleConnTimeout = 90 * time.Second
	tcpKeepAlive    = 30 * time.Second
)
