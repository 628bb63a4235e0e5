// Package nip98 makes and checks NIP-98 HTTP auth tokens: a kind 27235
// Nostr event carrying the request URL (`u`), the HTTP method (`method`) and,
// when a body is sent, the SHA-256 of the body (`payload`), signed by the
// caller's key and sent as `Authorization: Nostr <base64(event JSON)>`.
//
// Clients call Token or Header. Servers call Verifier.Verify (or
// Verifier.Request) with what they expect; it returns the authenticated
// public key, or an error wrapping one of the Err* sentinels that says what
// was wrong. Besides the `Nostr` scheme the verifier accepts HTTP Basic auth
// whose password is the token, which is how git older than 2.46 (no
// authtype capability) carries it. Replays are refused through a SeenCache
// when the caller supplies one; git routes do not, since git reuses one token
// for the GET and the POST of a fetch or push.
//
// The package does not decide who may do what (membership, bans, roles), does
// not read the request body (the caller passes it, already size-capped), and
// starts no goroutines.
package nip98
