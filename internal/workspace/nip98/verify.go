package nip98

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"buzzbox/internal/nostrkey"

	"github.com/nbd-wtf/go-nostr"
)

// Reasons a token is refused. Verify's errors wrap exactly one of them and
// add the details; servers map them to status codes (ErrNoToken: 401 with a
// Challenge; the others: 401 without one).
var (
	ErrNoToken   = errors.New("no NIP-98 token")
	ErrMalformed = errors.New("malformed NIP-98 token")
	ErrKind      = errors.New("wrong event kind")
	ErrSignature = errors.New("bad event id or signature")
	ErrExpired   = errors.New("created_at outside the allowed window")
	ErrURL       = errors.New("u tag does not match the request URL")
	ErrMethod    = errors.New("method tag does not match the request method")
	ErrPayload   = errors.New("payload tag does not match the request body")
	ErrReplay    = errors.New("replay detected")
)

// Verifier checks tokens. The zero value checks with MaxSkew against the
// system clock and does no replay detection.
type Verifier struct {
	// Skew is the allowed distance of created_at from Now, either way. Zero
	// means MaxSkew (60 s).
	Skew time.Duration
	// Now is the server clock. Nil means time.Now.
	Now func() time.Time
	// Seen refuses a second use of an event id. Nil disables replay
	// detection (git routes, which reuse one token for GET and POST).
	Seen *SeenCache
	// Shared, when set, claims an id Seen has let through in a store that
	// several servers share (a database), so a token used on one is a
	// replay on the others; false refuses it as ErrReplay. Request passes
	// it the request's context, Verify and Check context.Background. Nil
	// claims in Seen only.
	Shared func(ctx context.Context, id string) bool
}

// Expect is what a request must match.
type Expect struct {
	// URL is the URL the token must name, compared after NormalizeURL.
	// Required. A server must build it from its own configured name, never
	// from the request's Host or X-Forwarded-* headers: those are the
	// client's to choose, so a token minted for another server would pass.
	URL string
	// OtherURLs are further URLs the token may name instead of URL, for a
	// server reachable under several names (loopback spellings, each
	// interface address). Nil means URL only.
	OtherURLs []string
	// Method is the request's HTTP method, compared case-insensitively.
	// Empty skips the check (git routes sign GET and reuse it for POST).
	Method string
	// Body is the request body when the server has read it. With a payload
	// tag present its SHA-256 must match. Nil skips the payload check.
	Body []byte
	// RequirePayload refuses a token without a payload tag when Body is
	// non-nil. False accepts one, as NIP-98 makes the tag optional.
	RequirePayload bool
}

// Result is an authenticated token.
type Result struct {
	PubKey nostrkey.PublicKey // the signer
	Event  *nostr.Event       // the whole event, e.g. for a NIP-OA auth tag
}

// Request verifies the Authorization header of r against want.
func (v *Verifier) Request(r *http.Request, want Expect) (Result, error) {
	evt, err := ParseHeader(r.Header.Get("Authorization"))
	if err != nil {
		return Result{}, err
	}
	return v.check(r.Context(), evt, want)
}

// Verify parses an Authorization header value (see ParseHeader) and checks
// the event it carries against want.
func (v *Verifier) Verify(authorization string, want Expect) (Result, error) {
	evt, err := ParseHeader(authorization)
	if err != nil {
		return Result{}, err
	}
	return v.check(context.Background(), evt, want)
}

// Check verifies a decoded event: kind 27235, id and signature, created_at
// within the skew, u, method, payload, and finally that its id is not a
// replay (claimed in Seen, then Shared, only when everything else passed,
// so refused tokens do not fill the cache).
func (v *Verifier) Check(evt *nostr.Event, want Expect) (Result, error) {
	return v.check(context.Background(), evt, want)
}

func (v *Verifier) check(ctx context.Context, evt *nostr.Event, want Expect) (Result, error) {
	if evt.Kind != Kind {
		return Result{}, fmt.Errorf("nip98: %w: kind %d, want %d", ErrKind, evt.Kind, Kind)
	}
	pub, err := nostrkey.ParsePublic(evt.PubKey)
	if err != nil || evt.PubKey != pub.Hex() {
		return Result{}, fmt.Errorf("nip98: %w: pubkey is not a lower-case hex curve point", ErrSignature)
	}
	if !evt.CheckID() {
		return Result{}, fmt.Errorf("nip98: %w: id does not hash the event", ErrSignature)
	}
	if !nostrkey.CheckEvent(evt) {
		return Result{}, fmt.Errorf("nip98: %w: signature does not verify for pubkey %s", ErrSignature, evt.PubKey)
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	skew := v.Skew
	if skew <= 0 {
		skew = MaxSkew
	}
	created := time.Unix(int64(evt.CreatedAt), 0)
	if d := now.Sub(created); d > skew || d < -skew {
		return Result{}, fmt.Errorf("nip98: %w: created_at %d is %s from server time %d (limit ±%s); sign a fresh token and check the clock",
			ErrExpired, evt.CreatedAt, d.Truncate(time.Second), now.Unix(), skew)
	}
	u, err := single(evt, tagURL)
	if err != nil {
		return Result{}, err
	}
	if !want.namedBy(u) {
		return Result{}, fmt.Errorf("nip98: %w: token names %q, request is for %q", ErrURL, u, want.URL)
	}
	m, err := single(evt, tagMethod)
	if err != nil {
		return Result{}, err
	}
	if want.Method != "" && !strings.EqualFold(m, want.Method) {
		return Result{}, fmt.Errorf("nip98: %w: token says %q, request is %s", ErrMethod, m, want.Method)
	}
	if want.Body != nil {
		if err := checkPayload(evt, want); err != nil {
			return Result{}, err
		}
	}
	if v.Seen != nil && !v.Seen.Claim(evt.ID, now) {
		return Result{}, fmt.Errorf("nip98: %w: event %s was already used", ErrReplay, evt.ID)
	}
	if v.Shared != nil && !v.Shared(ctx, evt.ID) {
		return Result{}, fmt.Errorf("nip98: %w: event %s was already used on another server", ErrReplay, evt.ID)
	}
	return Result{PubKey: pub, Event: evt}, nil
}

// namedBy reports whether u names URL or one of OtherURLs.
func (want Expect) namedBy(u string) bool {
	if SameURL(u, want.URL) {
		return true
	}
	for _, o := range want.OtherURLs {
		if SameURL(u, o) {
			return true
		}
	}
	return false
}

func checkPayload(evt *nostr.Event, want Expect) error {
	n := 0
	var got string
	for tag := range evt.Tags.FindAll(tagPayload) {
		n++
		got = tag[1]
	}
	switch {
	case n == 0 && want.RequirePayload:
		return fmt.Errorf("nip98: %w: token has no payload tag but the request has a body", ErrPayload)
	case n == 0:
		return nil
	case n > 1:
		return fmt.Errorf("nip98: %w: %d payload tags", ErrMalformed, n)
	}
	sum := sha256.Sum256(want.Body)
	if !strings.EqualFold(got, hex.EncodeToString(sum[:])) {
		return fmt.Errorf("nip98: %w: token hashes to %.64q, body (%d bytes) to %s", ErrPayload, got, len(want.Body), hex.EncodeToString(sum[:]))
	}
	return nil
}

// single returns the value of the one tag named key, refusing none or more.
func single(evt *nostr.Event, key string) (string, error) {
	n := 0
	var val string
	for tag := range evt.Tags.FindAll(key) {
		n++
		val = tag[1]
	}
	switch n {
	case 1:
		return val, nil
	case 0:
		return "", fmt.Errorf("nip98: %w: no %q tag", ErrMalformed, key)
	default:
		return "", fmt.Errorf("nip98: %w: %d %q tags", ErrMalformed, n, key)
	}
}
