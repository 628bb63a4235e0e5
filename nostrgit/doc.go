// Package nostrgit holds the two git helpers that let an agent commit, tag
// and push under its Nostr identity, with plain git driving them.
//
// Synopsis:
//
//	git-sign-nostr --status-fd=N -bsau KEY          (sign: payload on stdin)
//	git-sign-nostr --status-fd=N --verify FILE -    (verify: payload on stdin)
//	git-credential-nostr get|store|erase            (request on stdin)
//
// Description:
//
// git-sign-nostr is git's gpg.x509.program (gpg.format=x509). Signing reads
// the commit or tag object on stdin and writes a NIP-GS v1 signature: three
// armor lines around base64 of {"v":1,"pk":…,"sig":…,"t":…[,"oa":[…]]},
// where sig is BIP-340 over SHA256("nostr:git:v1:" t ":" [oa fields ":"]
// payload). KEY (user.signingkey) must be the loaded key as hex or npub;
// anything else fails closed. Verifying checks the stored signature strictly
// and writes the gpg status lines git parses (NEWSIG, GOODSIG/BADSIG/ERRSIG,
// VALIDSIG, TRUST_*), plus a human line on stderr. Trust is advisory:
// TRUST_FULLY when the signer is the configured user.signingkey, otherwise
// TRUST_UNDEFINED (git shows %G? = U).
//
// git-credential-nostr answers `get` with a fresh NIP-98 token (kind 27235,
// u = the repository root URL, method from the server's challenge) for
// relay remotes: as authtype=Nostr/credential when git offers
// capability[]=authtype (git ≥ 2.46), else as username/password with the
// token as the Basic password, which our relay accepts; so git 2.39 works
// too. It needs credential.useHttpPath=true. It says nothing for remotes
// whose challenges are not ours, and `store`/`erase` do nothing.
//
// Both find the key in NOSTR_PRIVATE_KEY, then BUZZ_PRIVATE_KEY, then the
// file `git config nostr.keyfile` names (mode 0600 or 0400; the signer also
// refuses symlinks and other owners), and an optional NIP-OA owner
// attestation in BUZZ_AUTH_TAG or `git config nostr.authtag`. They never
// print the private key.
//
// Options (git-sign-nostr):
//
//	--status-fd=N, --status-fd N   where status lines go (N ≥ 1; default stderr)
//	-bsau KEY                      sign as KEY
//	--verify FILE                  verify the signature in FILE; needs a lone -
//	(other arguments are ignored, for forward compatibility)
//
// These are synchronous helpers: no goroutines, no logger, no network. The
// only child they start is `git config --get`, without the key variables in
// its environment. Failures print `error: …` on stderr and exit 1. Note that
// git 2.39 reads a signer's stderr as its status stream and, on failure,
// only says "gpg failed to sign the data".
//
// Sub-packages: nip98 makes and verifies NIP-98 tokens (also for the relay
// and the buzz CLI); nipoa parses and verifies NIP-OA attestations.
package nostrgit
