package relayclient

import "time"

// Frame and body caps.
const (
	// MaxFrameBytes bounds one websocket message from the relay: a full
	// page of events at the relay's content cap, with room for tags.
	MaxFrameBytes = 32 << 20
	// maxChallengeBytes: a NIP-42 challenge longer than this is not
	// answered, so a hostile relay cannot make us sign a huge event.
	maxChallengeBytes = 1024
	// maxInfoBytes caps the NIP-11 document.
	maxInfoBytes = 256 << 10
	// maxResponseBytes caps one HTTP bridge response body: a full page of
	// 500 events at the 64 KiB content cap, with room for tags.
	maxResponseBytes = 64 << 20
	// maxErrorBodyBytes caps how much of a non-2xx body is read for the
	// message.
	maxErrorBodyBytes = 16 << 10
	// maxQueryEvents bounds one query's answer over a long-lived
	// subscriber's socket; events past it are dropped.
	maxQueryEvents = 2000
)

// Connection timing (harness.md §4).
const (
	// DefaultWriteTimeout bounds one websocket write once it has started.
	DefaultWriteTimeout = 10 * time.Second
	// authWait is how long a login waits for the challenge, then for the
	// OK that answers our AUTH.
	authWait = 20 * time.Second
	// dialTimeout bounds a subscriber's websocket dial.
	dialTimeout = 30 * time.Second
	// pingInterval and pongTimeout: a subscriber pings every 30 s and
	// ends a session that gets no pong within 10 s.
	pingInterval = 30 * time.Second
	pongTimeout  = 10 * time.Second
	// stableConnection is how long a session must last for the next
	// reconnect to start again at the bottom of the backoff ladder.
	stableConnection = 60 * time.Second
	// reqSpacing spaces the REQs of a resubscribe, so a reconnect does
	// not trip the relay's rate limit.
	reqSpacing = 125 * time.Millisecond
	// sinceSkew is subtracted from every since value of a resubscribe,
	// for clocks a little apart.
	sinceSkew = 5

	// replayLimit is the limit a REQ without one is sent with. A relay
	// answers a limitless REQ with its default page (eventstore's badger
	// and buzz-relay: 250, a quarter of their maximum), so a resubscribe
	// after a drop that missed more lost the oldest of them; 1000 is the
	// most buzz-relay and eventstore serve in one REQ.
	replayLimit = 1000
	// initialConnectRetries is how many times a subscriber's first
	// connection is retried (after 1, 2, 4, 8, 16 s) before Run gives up.
	initialConnectRetries = 5
	// dnsRetryDelay is the reconnect delay after a name lookup failed; it
	// does not climb the ladder.
	dnsRetryDelay = 2 * time.Second
)

// backoffLadder is the reconnect ladder in seconds (harness.md §4.6).
var backoffLadder = [...]int{1, 2, 4, 8, 16, 32, 60}

// The rate-limit gate (harness.md §4.5–4.6).
const (
	// rateGateDefault is the gate when the relay gives no usable
	// "retry in N s" hint.
	rateGateDefault = 5 * time.Second
	// rateGateMinHint: hints shorter than this are not trusted and
	// become rateGateDefault.
	rateGateMinHint = 2 * time.Second
	// rateGateMax is the longest hint honoured, so a hostile or broken
	// relay cannot park a subscriber for good.
	rateGateMax = 10 * time.Minute
)

// Retry policy of Client (nostrgit-cli.md §6.2): attempts, jitter
// ceilings before attempts 2 and 3, and the cap on a relay's "retry in
// Ns" hint.
const (
	MaxAttempts   = 3
	jitterSecond  = 500 * time.Millisecond
	jitterThird   = 1500 * time.Millisecond
	maxRetryAfter = 30 * time.Second
	// maxRetryHintDigits bounds the number read from "retry in N s".
	maxRetryHintDigits = 6
)
