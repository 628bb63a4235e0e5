package nostrgit

import (
	"fmt"
	"io"
)

// Usage texts for --help; git never asks for them, people do.
const (
	signUsage = `usage: git-sign-nostr --status-fd=N -bsau KEY            sign the object on stdin
       git-sign-nostr --status-fd=N --verify FILE -      verify FILE against stdin

git's signing program for gpg.format=x509: NIP-GS v1 signatures by the Nostr key.
Set it up with:
  git config gpg.format x509
  git config gpg.x509.program git-sign-nostr
  git config user.signingkey <your pubkey hex or npub>
Key: NOSTR_PRIVATE_KEY, else BUZZ_PRIVATE_KEY, else the 0600 file in git config nostr.keyfile.
Attestation (optional): BUZZ_AUTH_TAG, else git config nostr.authtag.

Flags:
  --status-fd=N           write gpg status lines to file descriptor N
  -b -s -a -u KEY         sign (detached, armored) as KEY, the pubkey hex or npub;
                          git passes them as -bsau KEY
  --verify FILE -         check the signature in FILE against the object on stdin
  --help                  print this help and exit

Example:
  git config gpg.format x509 && git config gpg.x509.program git-sign-nostr
  git commit -S -m 'signed by my Nostr key'
`
	credentialUsage = `usage: git-credential-nostr get|store|erase

git credential helper answering relay challenges with NIP-98 tokens.
Set it up with:
  git config credential.helper nostr
  git config credential.useHttpPath true
Key: NOSTR_PRIVATE_KEY, else BUZZ_PRIVATE_KEY, else the 0600 file in git config nostr.keyfile.
Attestation (optional): BUZZ_AUTH_TAG, else git config nostr.authtag.
Git 2.46 and later send the token as "Authorization: Nostr"; older git as a Basic password.

Flags:
  --help                  print this help and exit

Example:
  git config credential.helper nostr && git config credential.useHttpPath true
  git remote add origin http://127.0.0.1:3000/git/<owner npub>/project.git && git push origin main
`
)

// wantsHelp reports whether args is a lone -h or --help, and prints text.
func wantsHelp(args []string, w io.Writer, text string) bool {
	if len(args) != 1 || (args[0] != "-h" && args[0] != "--help") {
		return false
	}
	fmt.Fprint(w, text)
	return true
}
