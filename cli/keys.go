package cli

import "github.com/nbd-wtf/go-nostr/nip19"

func nip19EncodeSecret(hexKey string) (string, error) { return nip19.EncodePrivateKey(hexKey) }
