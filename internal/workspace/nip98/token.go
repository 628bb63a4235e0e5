package nip98

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// Kind is the NIP-98 HTTP auth event kind.
const Kind = 27235

// Scheme is the HTTP auth scheme carrying a token.
const Scheme = "Nostr"

// Tag names of a NIP-98 event.
const (
	tagURL     = "u"
	tagMethod  = "method"
	tagPayload = "payload"
	tagNonce   = "nonce"
)

// Options are the optional parts of a token.
type Options struct {
	// Body, when non-nil, adds a `payload` tag with its SHA-256. Nil sends
	// no payload tag (git routes, bodiless requests).
	Body []byte
	// Nonce adds a `nonce` tag with a random UUID v4, so that two requests
	// in the same second still get distinct event ids. False adds none.
	Nonce bool
	// Tags are appended after the NIP-98 tags, e.g. a NIP-OA `auth` tag.
	// Nil appends nothing.
	Tags nostr.Tags
	// Now is the signing time. Zero means time.Now().
	Now time.Time
}

// Event builds and signs a NIP-98 event for a request to url with method.
func Event(key *nostrkey.Secret, url, method string, opt Options) (*nostr.Event, error) {
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	evt := &nostr.Event{
		Kind:      Kind,
		CreatedAt: nostr.Timestamp(now.Unix()),
		Content:   "",
		Tags:      nostr.Tags{{tagURL, url}, {tagMethod, method}},
	}
	if opt.Body != nil {
		sum := sha256.Sum256(opt.Body)
		evt.Tags = append(evt.Tags, nostr.Tag{tagPayload, hex.EncodeToString(sum[:])})
	}
	if opt.Nonce {
		evt.Tags = append(evt.Tags, nostr.Tag{tagNonce, workspace.NewUUID()})
	}
	evt.Tags = append(evt.Tags, opt.Tags...)
	if err := key.SignEvent(evt); err != nil {
		return nil, fmt.Errorf("nip98: sign token for %s %s: %w", method, url, err)
	}
	return evt, nil
}

// Encode returns the token form of evt: standard base64, with padding, of
// its compact JSON.
func Encode(evt *nostr.Event) string {
	return base64.StdEncoding.EncodeToString([]byte(evt.String()))
}

// Token signs a NIP-98 event and returns it encoded, ready for the
// credential= line or a Basic password.
func Token(key *nostrkey.Secret, url, method string, opt Options) (string, error) {
	evt, err := Event(key, url, method, opt)
	if err != nil {
		return "", err
	}
	return Encode(evt), nil
}

// Header signs a NIP-98 event and returns the Authorization header value,
// "Nostr <token>".
func Header(key *nostrkey.Secret, url, method string, opt Options) (string, error) {
	tok, err := Token(key, url, method, opt)
	if err != nil {
		return "", err
	}
	return Scheme + " " + tok, nil
}

// Challenge returns the WWW-Authenticate value a server sends with a 401 so
// that git asks its credential helper: `Nostr realm="buzz", method="GET"`.
// Git routes should send BasicChallenge as a second WWW-Authenticate header.
func Challenge(method string) string {
	return Scheme + ` realm="buzz", method="` + method + `"`
}

// BasicChallenge is the second WWW-Authenticate value git routes send. Git
// before 2.46 hands credentials to libcurl, which only sends them for a
// scheme it knows; without a Basic challenge next to the Nostr one, git 2.39
// gets a token from the helper and never sends it.
const BasicChallenge = `Basic realm="buzz"`
