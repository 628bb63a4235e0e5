// Package relay is buzz-relay, the Nostr relay a buzz workspace lives on.
//
// # Synopsis
//
//	buzz-relay [--listen 127.0.0.1:3000] [--data ./buzz-relay-data] [--sync] [--db postgres://…]
//	           [--owner PUBKEY] [--allow PUBKEY]… [--allow-file FILE] [--open]
//	           [--public-url ws(s)://host] [--max-event-bytes N] [--max-filters N]
//	           [--max-subscriptions N] [--rate N] [--burst N] [--log-level L] [--log-json]
//
// # Description
//
// One process serves, on one HTTP listener:
//
//   - NIP-01 over websocket, built on khatru, with events in an embedded
//     badger store under --data (or PostgreSQL with --db). Ephemeral kinds
//     (20000–29999) are forwarded and never stored; replaceable and
//     addressable kinds keep the newest; NIP-09 deletions by the author.
//     An acknowledged event survives kill -9; with --sync it also survives
//     a power cut.
//   - NIP-11: the information document names the supported NIPs, the
//     limits and the HTTP bridge.
//   - NIP-42: the relay sends AUTH at once; reads and writes need an
//     authenticated member (the owner, an allowlisted key, or an agent
//     whose NIP-OA attestation names one) unless --open. An AUTH event must
//     carry exactly one challenge tag, one relay tag naming this relay
//     (localhost, ::1 and 127.0.0.1 are one host) and a created_at within
//     60 s. Bad signatures get an "invalid:" OK.
//   - Channels as NIP-29-style groups (h tag with a UUID); see channels.go.
//   - The HTTP bridge: POST /query, /count, /events with NIP-98 auth.
//   - Git smart HTTP under /git/<owner>/<name>.git through git http-backend.
//
// It does not federate, mirror other relays, serve Blossom uploads or
// speak NIP-86 management.
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
