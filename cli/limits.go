package cli

import "time"

// maxContentBytes is the largest message body the CLI signs; the relay's
// event cap leaves room for tags above it, and the spec refuses 65 537.
const maxContentBytes = 65536

// maxMentions caps the p tags of one message, so a runaway @-list cannot
// page every member of a large channel.
const maxMentions = 50

// maxEmojiChars bounds a reaction's content, in characters.
const maxEmojiChars = 64

// maxShortcodeChars bounds a custom emoji shortcode, in characters.
const maxShortcodeChars = 64

// maxDiffBytes is where send-diff cuts a diff (at a hunk boundary).
const maxDiffBytes = 60 << 10

// maxDiffInputBytes bounds the diff text read before truncation.
const maxDiffInputBytes = 16 << 20

// maxMemBodyBytes is the NIP-44 plaintext limit a NIP-AE body must fit.
const maxMemBodyBytes = 65535

// maxMemSlugBytes bounds a NIP-AE slug.
const maxMemSlugBytes = 255

// maxMemSegmentBytes bounds one path segment of a `mem/…` slug.
const maxMemSegmentBytes = 64

// pageSize is how many events a paged read asks for per request.
const pageSize = 500

// Read limits per command: default and ceiling, from the spec.
const (
	messagesGetDefault   = 50
	messagesGetMax       = 200
	threadDefault        = 100
	threadMax            = 500
	searchDefault        = 20
	searchMax            = 100
	channelsListDefault  = 500
	usersMaxPubkeys      = 200
	feedDefault          = 20
	feedMax              = 50
	memLsLimit           = 5000
	memHeadLimit         = 16
	nameSearchCandidates = 5
)

// Timeouts (BUZZ_TIMEOUT_SECS, BUZZ_CONNECT_TIMEOUT_SECS); 0 or garbage
// keeps the default.
const (
	defaultTimeout        = 30 * time.Second
	defaultConnectTimeout = 15 * time.Second
	// wsWriteCap bounds a whole websocket write (connect, AUTH, EVENT, OK).
	wsWriteCap = 75 * time.Second
)

// stdoutBuffer batches output writes; a streamed list flushes as it fills.
const stdoutBuffer = 64 << 10

// maxInviteExpiry is the longest --expires of members invite; the relay
// refuses longer invites, so a leaked link does not stay good.
const maxInviteExpiry = 30 * 24 * time.Hour

// minInviteID and maxInviteID bound the --revoke id of members invites:
// the relay's ids are the first 16 hex digits of a token's SHA-256, and it
// takes the whole 64-digit hash too.
const (
	minInviteID = 16
	maxInviteID = 64
)

// maxAttestUntil is the largest created_at bound NIP-OA conditions hold.
const maxAttestUntil = 4294967295
