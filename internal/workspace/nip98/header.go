package nip98

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
)

// ParseHeader decodes an Authorization header value into the event it
// carries. It accepts `Nostr <token>` and `Basic <base64(user:token)>` (git
// before 2.46 can only send Basic; the user name is ignored). The token is
// base64 of the event JSON in the standard or URL-safe alphabet, padded or
// not. A missing header or another scheme gives ErrNoToken, which is when a
// server should answer with a challenge; anything undecodable gives
// ErrMalformed. ParseHeader checks shape only, not signatures.
func ParseHeader(h string) (*nostr.Event, error) {
	h = strings.TrimSpace(h)
	if h == "" {
		return nil, fmt.Errorf("nip98: %w: no Authorization header", ErrNoToken)
	}
	if len(h) > maxHeaderBytes {
		return nil, fmt.Errorf("nip98: %w: Authorization header is %d bytes, over the %d-byte limit", ErrMalformed, len(h), maxHeaderBytes)
	}
	scheme, rest, _ := strings.Cut(h, " ")
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, Scheme):
		return DecodeToken(rest)
	case strings.EqualFold(scheme, "Basic"):
		raw, err := decodeBase64(rest)
		if err != nil {
			return nil, fmt.Errorf("nip98: %w: Basic credentials are not base64", ErrMalformed)
		}
		_, pass, ok := strings.Cut(string(raw), ":")
		if !ok || pass == "" {
			return nil, fmt.Errorf("nip98: %w: Basic credentials hold no password (the token goes there)", ErrMalformed)
		}
		return DecodeToken(pass)
	default:
		return nil, fmt.Errorf("nip98: %w: Authorization scheme %.32q is neither %s nor Basic", ErrNoToken, scheme, Scheme)
	}
}

// DecodeToken decodes a bare token (base64 of event JSON) into its event.
func DecodeToken(tok string) (*nostr.Event, error) {
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return nil, fmt.Errorf("nip98: %w: empty token", ErrMalformed)
	}
	if len(tok) > maxHeaderBytes {
		return nil, fmt.Errorf("nip98: %w: token is %d bytes, over the %d-byte limit", ErrMalformed, len(tok), maxHeaderBytes)
	}
	raw, err := decodeBase64(tok)
	if err != nil {
		return nil, fmt.Errorf("nip98: %w: token is not base64", ErrMalformed)
	}
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("nip98: %w: token is not UTF-8", ErrMalformed)
	}
	var evt nostr.Event
	if err := json.Unmarshal(raw, &evt); err != nil {
		return nil, fmt.Errorf("nip98: %w: token is not a JSON event: %v", ErrMalformed, err)
	}
	if evt.ID == "" || evt.PubKey == "" || evt.Sig == "" {
		return nil, fmt.Errorf("nip98: %w: event lacks id, pubkey or sig", ErrMalformed)
	}
	return &evt, nil
}

// decodeBase64 accepts the standard and URL-safe alphabets, padded or not.
func decodeBase64(s string) ([]byte, error) {
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if !strings.HasSuffix(s, "=") && len(s)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	return enc.Strict().DecodeString(s)
}
