package nostrgit

// maxPayloadBytes caps the commit or tag object read from stdin; git objects
// of 100 MiB are already absurd, and the spec fails larger ones.
const maxPayloadBytes = 100 << 20

// maxSigFileBytes caps the signature file git hands the verifier; a v1
// envelope is about 300 bytes of armor.
const maxSigFileBytes = 8 << 10

// maxConfigBytes caps what we read from a `git config --get` child; more
// means something is wrong and the value is treated as unset (spec: 8 KiB).
const maxConfigBytes = 8 << 10

// maxCredentialInputBytes caps the credential request git writes on stdin:
// a handful of short key=value lines, plus challenges.
const maxCredentialInputBytes = 64 << 10

// maxEnvConfigEntries bounds the GIT_CONFIG_COUNT we walk ourselves; the
// session host sets about ten, and beyond this we let git read them.
const maxEnvConfigEntries = 1000
