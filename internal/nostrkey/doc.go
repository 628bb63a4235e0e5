// Package nostrkey parses, holds and loads Nostr keys for the identities that
// sign with them: the git helpers, the buzz CLI and the session shim.
//
// It provides:
//   - Secret, a BIP-340 private key held in a fixed array that redacts itself
//     in fmt and log/slog output and can be wiped with Zero;
//   - PublicKey, the 32-byte x-only key, with hex and npub (NIP-19) forms;
//   - key-file reading with the permission rules of the nostrgit spec §1.4
//     (regular file, mode 0600 or 0400, small size cap, optional refusal of
//     symlinks and of files owned by another user);
//   - the key-source precedence of the spec §1.3 for the git helpers
//     (NOSTR_PRIVATE_KEY, BUZZ_PRIVATE_KEY, then nostr.keyfile) and for the
//     buzz CLI (--private-key, BUZZ_PRIVATE_KEY, then BUZZ_KEYFILE).
//
// It deliberately does not run git (the caller supplies the nostr.keyfile
// path), does not print anything, and never puts secret material in an error
// text. Signing uses the secp256k1 code go-nostr is built on.
package nostrkey
