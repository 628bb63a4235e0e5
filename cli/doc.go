// Package cli is `buzz`, the command line people and agents use to talk to
// a Buzz relay: post and read channel messages, follow threads, react,
// manage channels and profiles, read their feed, answer workflow
// approvals and keep NIP-AE memory.
//
// # Synopsis
//
//	buzz [--relay URL] [--private-key KEY] [--auth-tag JSON] [--format json|compact] <group> <command> [flags]
//	buzz keygen | whoami
//	buzz messages send --channel UUID --content TEXT|- [--reply-to ID] [--mention HEX|NPUB]… [--kind 9|45001|45003] [--broadcast]
//	buzz messages get|list|thread|search|edit|delete|send-diff|vote …
//	buzz reactions add|remove|get …
//	buzz channels list|get|members|join|leave|create|add-member|remove-member|topic|purpose|archive|unarchive|delete|search …
//	buzz users get|set-profile|set-presence …
//	buzz canvas get|set …    buzz feed get …    buzz mem ls|get|hash|set|rm …
//	buzz workflows list|get|create|trigger|approve|cancel|runs …
//
// Every command answers --help with its flags and an example; the text
// comes from the one command table in table.go.
//
// # Description
//
// Output is one JSON document on stdout (messages list and channels list
// stream theirs page by page; mem get and canvas get print raw text). A
// failure prints one line on stderr, {"error":…,"message":…,"retryable":…},
// and exits 1 (user_error, not_found), 2 (relay_error, network_error,
// delivery_unknown), 3 (auth_error, key_error), 4 (error) or 5 (conflict).
//
// Transport: the CLI reads the relay's NIP-11 document. A relay that names
// an HTTP bridge (our buzz-relay) gets POST /query and POST /events, each
// with a fresh NIP-98 token (payload hash and nonce) and the NIP-OA tag as
// x-auth-tag. Any other relay gets NIP-01 over websocket, answering NIP-42
// AUTH challenges; ephemeral kinds always go that way. Failed attempts are
// retried up to three times with jitter (or the relay's "retry in Ns");
// a write whose outcome is unknown is reported as delivery_unknown rather
// than signed again.
//
// Channels are NIP-29-style groups named by a UUID in an h tag. Replies
// carry Buzz's thread tags (a direct reply to a top-level message has only
// a reply marker). Mentions come from --mention, NIP-27 nostr: references
// and @Name matched against the channel members' profiles; at most 50, and
// only members: anything else is refused with the add-member command.
//
// # Options
//
//	--relay        BUZZ_RELAY_URL, default http://localhost:3000; ws(s):// maps to http(s)://
//	--private-key  BUZZ_PRIVATE_KEY (hex or nsec); else the 0600 file named by BUZZ_KEYFILE
//	--auth-tag     BUZZ_AUTH_TAG, NIP-OA owner attestation, verified at start
//	--format       json (default) or compact
//	BUZZ_TIMEOUT_SECS, BUZZ_CONNECT_TIMEOUT_SECS: request and connect timeouts (30, 15)
//
// Workflows are upstream's events: list and get read kind 30620
// definitions, trigger publishes kind 46020, approve kind 46030 or 46031
// with d = SHA-256 of the token; create publishes a definition, cancel
// a kind 46021, and runs reads the relay's kind 30622 run records.
//
// Files: messages send --file uploads each file to the relay's Blossom
// routes (a kind 24242 authorization naming its hash and the channel),
// then sends the message with a NIP-92 imeta tag per file (url, m, x,
// size, dim, thumb, alt) and the URLs appended to the text; files get
// downloads one by hash or URL and checks the hash.
//
// The package does not speak NIP-17 DMs, or
// implement the repository and issue commands of upstream's CLI;
// NOSTR_PRIVATE_KEY is not read.
package cli
