// Package workspace is the buzz workspace's Nostr vocabulary: every event
// kind the workspace speaks (kinds.go), the tag and header names more than
// one package reads or writes (tags.go), the environment names shared by
// identities (env.go) and NIP-AE memory addressing (memory.go). NIP-98
// tokens and NIP-OA attestations live in the subpackages nip98 and nipoa.
//
// Each name is defined here once, and nowhere else in the module
// (TestVocabularyHasOneHome checks the module's sources). The package
// holds names and pure functions only: it imports nothing beyond the
// standard library, opens no connection and reads no environment, so
// every identity, internal/nostrkey included, may import it.
package workspace
