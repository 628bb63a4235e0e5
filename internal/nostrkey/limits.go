package nostrkey

// maxKeyFileBytes caps a key file. A valid key is at most 66 bytes with its
// newline; the spec allows any cap up to 1024, and a bigger file is surely
// not a key.
const maxKeyFileBytes = 1024

// maxEnvKeyBytes caps a key taken from the environment; the spec makes a
// longer value a fatal error rather than something to trim and guess at.
const maxEnvKeyBytes = 128

// tableAfterBaseMults is how many base-point multiplications a process does
// the generic way before it switches to the secp256k1 package's
// precomputed table (bip340.go). A sign takes three and a verify one, so
// the CLI identities (a sign or two per run) never pay the table's 5–15 ms;
// a process past 64 is signing or verifying for a living, and the table's
// ~12 µs saving per multiplication repays it within a second.
const tableAfterBaseMults = 64
