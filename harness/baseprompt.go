package harness

import _ "embed"

// builtinBasePrompt is the platform prompt compiled into the binary
// (spec §16); --base-prompt-file replaces it, --no-base-prompt drops it.
//
//go:embed base_prompt.md
var builtinBasePrompt string
