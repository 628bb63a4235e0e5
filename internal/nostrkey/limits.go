package nostrkey

// maxKeyFileBytes caps a key file. A valid key is at most 66 bytes with its
// newline; the spec allows any cap up to 1024, and a bigger file is surely
// not a key.
const maxKeyFileBytes = 1024

// maxEnvKeyBytes caps a key taken from the environment; the spec makes a
// longer value a fatal error rather than something to trim and guess at.
const maxEnvKeyBytes = 128
