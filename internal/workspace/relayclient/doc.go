// Package relayclient is the one client of a Nostr relay the workspace's
// identities share, in layers:
//
//   - Conn (conn.go): one websocket — dial, frames in and out with size
//     caps, NIP-42 login (with the NIP-OA tag when configured), pings.
//   - the HTTP bridge (bridge.go): the NIP-11 probe, NIP-98 signed POSTs
//     to /query, /count and /events with the payload tag and x-auth-tag,
//     and NIP-86 management.
//   - Client (client.go): query, publish and count through the bridge or
//     the websocket, with classified errors (*Error: category, message,
//     retryable) and the retry policy of nostrgit-cli.md §6.2.
//   - Subscriber (subscriber.go): a long-lived login with subscriptions
//     asked for again after every reconnect, backpressure, and the
//     rate-limit gate of harness.md §4.5–4.6.
//
// It implements NIP-01, NIP-11, NIP-42 and NIP-98 as the buzz relay
// speaks them. It does not decide what to subscribe to, keep
// application state, or sign the events it carries (except AUTH events
// and NIP-98 tokens): callers hand it signed events.
package relayclient
