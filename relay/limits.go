package relay

import "time"

// Limits bounded by the relay. Each has a flag (named beside it) that
// changes it; the Config field of the same name carries the value.
const (
	// defaultMaxEventBytes bounds one event as serialised JSON; bigger
	// events are refused with "invalid:". A chat message is capped at
	// 64 KiB by the CLI, so four times that leaves room for tags.
	defaultMaxEventBytes = 256 << 10 // --max-event-bytes

	// maxMessageBytes bounds one websocket message (an EVENT envelope or a
	// REQ); a bigger frame ends the connection. It must exceed
	// defaultMaxEventBytes by the envelope overhead.
	maxMessageBytes = 512 << 10

	// writeWait bounds one websocket write: a client that has not taken
	// a message within it loses its connection, so that publishers whose
	// events it subscribed to are not held.
	writeWait = 10 * time.Second

	// maxQueuedMessages bounds the messages waiting for one connection's
	// writer; past it, whoever sends waits (at most writeWait, after
	// which a connection that does not read is closed).
	maxQueuedMessages = 256

	// pingPeriod is how often the relay pings a websocket client, and
	// pongWait how long it waits for the pong before closing: a vanished
	// client (no FIN, a sleeping laptop) costs at most their sum.
	pingPeriod = 30 * time.Second
	pongWait   = 60 * time.Second

	// maxQueriesInFlight bounds the store queries one connection runs at
	// once (a REQ's stored events, a COUNT, which may page through the
	// store); the next waits, and so does the rest of the connection's
	// messages. A harness opens a dozen subscriptions at start.
	maxQueriesInFlight = 8

	// maxPendingLive bounds the events kept for a subscription while its
	// stored events are sent, to follow its EOSE; past it, live events
	// published during a slow stored query are left to the next query.
	maxPendingLive = 1000

	// challengeBytes is the random part of a NIP-42 challenge, sent as
	// hex.
	challengeBytes = 16

	// expirySweep is how often events past their NIP-40 expiration are
	// deleted.
	expirySweep = time.Hour

	// defaultMaxFilters bounds the filters in one REQ or one /query body;
	// clients that need more should split their request.
	defaultMaxFilters = 20 // --max-filters

	// defaultMaxSubscriptions bounds the live subscriptions of one
	// websocket connection; a harness uses one per channel plus two.
	defaultMaxSubscriptions = 100 // --max-subscriptions

	// defaultEventsPerSecond and defaultEventBurst shape the per-pubkey
	// token bucket for writes: sustained rate and burst size.
	defaultEventsPerSecond = 50   // --rate
	defaultEventBurst      = 500  // --burst
	maxRateBuckets         = 4096 // idle full buckets beyond this are forgotten

	// maxQueryLimit bounds how many stored events one filter returns.
	maxQueryLimit = 1000

	// defaultMaxFuture and defaultMaxAge bound an event's created_at
	// against the relay's clock, as strfry's rejectEventsNewerThanSeconds
	// (900) and rejectEventsOlderThanSeconds (94 608 000, three years) do:
	// an event dated far ahead would outrank every later replaceable
	// version (a profile pinned for years), one dated 1970 is a forgery
	// or a broken clock.
	defaultMaxFuture = 15 * time.Minute         // --max-future
	defaultMaxAge    = 3 * 365 * 24 * time.Hour // --max-age

	// authWindow is how far created_at of a NIP-42 AUTH or NIP-98 event
	// may be from now, either way.
	authWindow = 60 * time.Second

	// replayWindow is how long a NIP-98 event id used on the HTTP bridge
	// is remembered; it must exceed twice authWindow.
	replayWindow = 2*authWindow + 10*time.Second

	// maxBridgeBody bounds a POST body of the HTTP bridge.
	maxBridgeBody = maxMessageBytes

	// maxAllowlistBytes bounds the allowlist file.
	maxAllowlistBytes = 1 << 20

	// shutdownGrace is how long Serve waits for HTTP requests in flight
	// when its context ends.
	shutdownGrace = 5 * time.Second
)

// Git hosting limits.
const (
	// maxPackBytes bounds the body of one git POST (a pushed pack or a
	// fetch negotiation); bigger requests get 413.
	maxPackBytes = 512 << 20 // BUZZ_GIT_MAX_PACK_BYTES upstream

	// maxRepoName bounds a repository name, .git suffix excluded.
	maxRepoName = 64
	// maxStateRefs bounds the refs one 30618 lists: at about 110 bytes a
	// ref tag, 2 000 refs stay well under the default event size limit.
	maxStateRefs = 2000
	// maxPktLine is git's largest pkt-line (LARGE_PACKET_MAX + 4).
	maxPktLine = 65520
	// maxPushCommands bounds the ref updates of one push the relay reads
	// before git does; a mirror push of every branch fits.
	maxPushCommands = 10000
	// maxPushHead bounds the bytes of a push's command list.
	maxPushHead = maxPushCommands * 200
	// maxPRScan bounds the pull requests of one repository a push looks
	// at for head branches that moved.
	maxPRScan = 500
	// maxMergeBody bounds a merge request's JSON body.
	maxMergeBody = 4 << 10
	// maxDiffBytes bounds a pull request diff the relay serves; a 5 000
	// line diff is about 400 KB.
	maxDiffBytes = 8 << 20
	// maxConflictFiles bounds the conflicting paths a refused merge names.
	maxConflictFiles = 50
	// maxRefLine bounds one line of git for-each-ref output (a ref name
	// and an object id).
	maxRefLine = 8 << 10

	// maxViewPath bounds the path parameter of the repository view's
	// tree, file and log endpoints (PATH_MAX on Linux).
	maxViewPath = 4096
	// maxTreeEntries bounds the entries one directory listing holds; a
	// larger directory shows its first entries and says it was cut.
	maxTreeEntries = 20000
	// maxTreeBytes bounds git ls-tree's output for one directory: 20 000
	// entries of about 80 bytes, with room for long names.
	maxTreeBytes = 8 << 20
	// maxBlobView bounds the bytes of a file the view shows; past it the
	// file is cut and the answer names the cap.
	maxBlobView = 1 << 20
	// maxBinarySniff is how far into a file the view looks for a NUL
	// byte to call it binary, as git's own buffer_is_binary does.
	maxBinarySniff = 8000
	// logPage is how many commits one log answer holds.
	logPage = 50
	// maxLogSkip bounds the log's skip parameter: a page that far back
	// still costs one rev-list walk.
	maxLogSkip = 1000000
	// maxLogBytes bounds the commit objects of one log page read from
	// git; commits past it are left to the next page.
	maxLogBytes = 4 << 20
	// maxLogMessage bounds the message of one commit in a log answer.
	maxLogMessage = 16 << 10
	// repoViewTimeout bounds the git commands of one view request, so a
	// huge repository cannot hold a request (and a git process) for long.
	repoViewTimeout = 20 * time.Second
)

// maxQueryKinds bounds the kinds (and tag values) one filter may list
// against the PostgreSQL store; the harness asks for at most a dozen.
const maxQueryKinds = 50

// maxReplaceTries bounds the transactions one replace of an event takes
// when concurrent replaces of the same author's kind conflict in badger:
// each retry reads again, so it succeeds unless as many others commit
// in between.
const maxReplaceTries = 10

// recheckSlack is how many more events a tag query asks the store for than
// its limit, so that events another tag name matched (a channel's own
// 39000/39002 for its #h) do not leave the page short.
const recheckSlack = 8

// Membership limits (members.go, nip86.go, invite.go).
const (
	// banCloseWrite bounds the Close frame sent to a banned key's
	// websocket before its socket is closed: a client that does not read
	// must not delay the cut-off.
	banCloseWrite = 250 * time.Millisecond

	// maxManagementBody bounds a NIP-86 request body: a method name and a
	// few short parameters.
	maxManagementBody = 64 << 10

	// maxReasonBytes bounds the reason stored with an allow or a ban.
	maxReasonBytes = 1 << 10

	// defaultInviteTTL and maxInviteTTL bound an invite's life: a week by
	// default, at most 30 days, so a leaked link does not stay good.
	defaultInviteTTL = 7 * 24 * time.Hour
	maxInviteTTL     = 30 * 24 * time.Hour

	// inviteTokenBytes is the random part of an invite token: 32 bytes,
	// 43 characters of unpadded URL-safe base64.
	inviteTokenBytes = 32

	// maxInviteChannels bounds the channels one invite may name.
	maxInviteChannels = 50

	// maxInviteBody bounds the body of POST /invite: {"token":"…"}.
	maxInviteBody = 4 << 10

	// inviteKeep is how long a used or expired invite is remembered after
	// its expiry, so a late redemption gets 410, not 404.
	inviteKeep = maxInviteTTL

	// maxInvites bounds the invites remembered at once (each is a small
	// stored record and a map entry); used and expired ones are dropped
	// first when it is reached.
	maxInvites = 10000

	// maxRemovalPasses bounds the passes a removal makes over the
	// channels listing the removed key: one more than needed catches a
	// channel it was making as the removal began (members.go).
	maxRemovalPasses = 3
)

// Limits of the owner's one-time sign-in links (login.go).
const (
	// loginTTL is how long a sign-in link from LoginToken works: long
	// enough to open the printed link, short enough that a link left in
	// a terminal's scrollback is dead.
	loginTTL = 10 * time.Minute

	// loginTokenBytes is the random part of a sign-in token: 32 bytes,
	// 43 characters of unpadded URL-safe base64.
	loginTokenBytes = 32

	// maxLogins bounds the sign-in links outstanding at once; minting
	// one more forgets the oldest.
	maxLogins = 16

	// maxLoginBody bounds the body of POST /login: {"token":"…"}.
	maxLoginBody = 4 << 10
)

// Fan-out between instances on one PostgreSQL database (fanout.go).
const (
	// schemaLockWait bounds the wait for another instance's schema work
	// at start; creating the schema takes well under a second.
	schemaLockWait = 60 * time.Second

	// fanoutMinReconnect and fanoutMaxReconnect bound lib/pq's backoff
	// when the listening connection drops: retry fast after a blip, no
	// faster than every few seconds while the database is down.
	fanoutMinReconnect = 100 * time.Millisecond
	fanoutMaxReconnect = 5 * time.Second

	// fanoutBatch bounds the notified ids fetched in one query; under
	// load one query stands for many events, below the store's id limit.
	fanoutBatch = 500

	// fanoutFetchTimeout bounds one fetch of notified events and one
	// pg_notify of an ephemeral event.
	fanoutFetchTimeout = 10 * time.Second

	// fanoutMarkEvery is how often an instance notifies a mark, which
	// moves its replay checkpoint (fanout.go): a replay after a blip
	// reads what was stored in the blip plus up to this much before it.
	// One small notification per instance per period.
	fanoutMarkEvery = 2 * time.Second

	// maxReplay bounds the rows one replay reads; a longer outage
	// leaves the rest to clients' own catch-up queries.
	maxReplay = 100000

	// maxNotifyPayload is the largest notification sent: PostgreSQL
	// refuses payloads of 8000 bytes or more.
	maxNotifyPayload = 7999

	// seenGeneration is the size of one generation of seenIDs: two of
	// them hold the ids of the last 200 000 to 400 000 events, minutes of
	// traffic at thousands of events per second, ~40 MB at most.
	seenGeneration = 200000

	// tokenSweepEvery is how many NIP-98 claims pass between sweeps of
	// the shared token table; each sweep drops claims past replayWindow.
	tokenSweepEvery = 256
)
