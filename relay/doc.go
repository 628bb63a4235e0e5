// Package relay is buzz-relay, the Nostr relay a buzz workspace lives on.
//
// # Synopsis
//
//	buzz-relay [--listen 127.0.0.1:3000] [--data ./buzz-relay-data] [--sync] [--db postgres://…]
//	           [--owner PUBKEY] [--admin PUBKEY]… [--allow PUBKEY]… [--allow-file FILE] [--open]
//	           [--public-url ws(s)://host]… [--max-event-bytes N] [--max-filters N]
//	           [--max-subscriptions N] [--rate N] [--burst N] [--max-future 15m]
//	           [--max-age 26280h] [--blob-dir DIR] [--max-blob-bytes N]
//	           [--log-level L] [--log-json]
//
// # Description
//
// One process serves, on one HTTP listener:
//
//   - NIP-01 over websocket (the relay's own core, ws.go, on
//     coder/websocket), with events in an embedded badger store under
//     --data (or PostgreSQL with --db). Live events follow a REQ's EOSE;
//     a REQ reusing a live id replaces it. Ephemeral kinds
//     (20000–29999) are forwarded and never stored; replaceable and
//     addressable kinds keep the newest; NIP-09 deletions by the author,
//     applied only once the deletion has passed every write check.
//     An acknowledged event survives kill -9; with --sync it also survives
//     a power cut. Events are refused ("invalid:", naming the flag) when
//     their JSON is over --max-event-bytes (counted as serialised, escapes
//     included) or their created_at is more than --max-future ahead of the
//     relay's clock or --max-age behind it (strfry's defaults: 15 minutes,
//     3 years); events the relay signs itself are exempt. COUNT and the
//     bridge's /count count every match, however many.
//   - NIP-11: the information document names the supported NIPs, the
//     limits and the HTTP bridge.
//   - NIP-42: the relay sends AUTH at once; reads and writes need an
//     authenticated member (the owner, an allowlisted key, or an agent
//     whose NIP-OA attestation names one) unless --open. An AUTH event must
//     carry exactly one challenge tag, one relay tag naming this relay
//     (localhost, ::1 and 127.0.0.1 are one host) and a created_at within
//     60 s. Bad signatures get an "invalid:" OK.
//   - The relay's names, which AUTH relay tags and NIP-98 u tags must use,
//     are the --public-url values when given, else the listen address; a
//     wildcard listen address (0.0.0.0, ::) answers to the loopback names,
//     itself and the host's interface addresses, with a warning to set
//     --public-url. Request headers (Host, X-Forwarded-*) never name it.
//   - NIP-OA attestations grant their owner's membership while their
//     created_at clauses hold at the relay's clock (checked at every use,
//     so a websocket loses the grant when it expires); every event written
//     under one must satisfy all its clauses (kind= limits writes, not
//     reads); git access needs one without kind= clauses. See auth.go.
//   - Channels as NIP-29-style groups (h tag with a UUID); see channels.go.
//     An event names at most one channel, and one referring (e, q) to a
//     channel's event must name that channel, so it is read as the
//     channel's (refs.go). A deleted channel (9008) leaves
//     a tombstone (kind 39008, signed by the relay, kept across restarts):
//     its events stay as hidden as before, it takes no more writes, and
//     only the relay owner may create its UUID again. Roles come from a
//     9000 in any written form (["role", r], ["p", pk, r], ["p", pk, "", r]);
//     a guest reads shared repositories and never pushes.
//   - The HTTP bridge: POST /query, /count, /events with NIP-98 auth; a
//     request with a body needs a payload tag hashing it.
//   - Git smart HTTP under /git/<owner>/<name>.git through git http-backend;
//     the owner is an npub or hex in either case. A 30617 shares a
//     repository only with an existing channel its author administers.
//   - NIP-86 management (POST / with application/nostr+json+rpc, NIP-98
//     with a payload tag; the owner and --admin keys only): allow,
//     disallow, ban and unban keys, list them, and createinvite; see
//     nip86.go, members.go and invite.go. Members and invites are kept as
//     relay-signed records in the store (kinds 39520, 39521), never served.
//     A ban closes the key's websockets, and its agents', at once.
//   - POST /invite redeems an invite for the key that signs its NIP-98
//     token; POST /login trades a one-time sign-in token (LoginToken) for
//     the key it was minted for.
//   - Blossom (BUD-01/02/06) for members: PUT and HEAD /upload, GET/HEAD/DELETE
//     /<sha256>, GET /list/<pubkey>, with kind 24242 authorization; blobs
//     streamed to --blob-dir (default <data>/blobs), at most
//     --max-blob-bytes (50 MB), typed from their content, thumbnails for
//     images at /thumb/<sha256>; a blob uploaded with a channel's h tag is
//     served only to those who may read the channel; nothing is served so
//     that it can run script in the web origin. See blossom.go.
//   - The web client at / (package web).
//
// It does not federate or mirror other relays, and keeps blobs on a
// filesystem (a shared --blob-dir), not in S3.
//
// # Library use
//
// Tests elsewhere start a relay in-process:
//
//	r, err := relay.Start(relay.Config{DataDir: t.TempDir(), Owner: pk}, "127.0.0.1:0")
//	defer r.Close()
//	url := r.URL()       // ws://127.0.0.1:PORT
//	base := r.HTTPURL()  // http://127.0.0.1:PORT, for /query, /events, /git/
//
// or build with New and run Serve(ctx, listener) themselves. PublicKey is
// the key that signs channel state (kinds 39000/39002).
package relay
