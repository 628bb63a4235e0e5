package nip98

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"

	"github.com/nbd-wtf/go-nostr"
)

const (
	k3  = "0000000000000000000000000000000000000000000000000000000000000003"
	pk3 = "f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9"
	k1  = "0000000000000000000000000000000000000000000000000000000000000001"
)

var t0 = time.Unix(1700000000, 0)

func key(t testing.TB, h string) *nostrkey.Secret {
	t.Helper()
	s, err := nostrkey.ParseSecret(h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func at(tm time.Time) func() time.Time { return func() time.Time { return tm } }

func TestRoundTrip(t *testing.T) {
	const u = "https://relay.example.com/git/owner/repo.git"
	h, err := Header(key(t, k3), u, "GET", Options{Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "Nostr ") {
		t.Fatalf("Header = %q; want Nostr scheme", h)
	}
	tok := strings.TrimPrefix(h, "Nostr ")
	raw, err := base64.StdEncoding.DecodeString(tok)
	if err != nil {
		t.Fatalf("token is not standard padded base64: %v", err)
	}
	if !strings.Contains(string(raw), `"kind":27235`) || !strings.Contains(string(raw), `["u","`+u+`"]`) || !strings.Contains(string(raw), `["method","GET"]`) {
		t.Errorf("token JSON = %s", raw)
	}
	v := Verifier{Now: at(t0)}
	forms := map[string]string{
		"nostr":          h,
		"lower scheme":   "nostr " + tok,
		"basic":          "Basic " + base64.StdEncoding.EncodeToString([]byte("nostr:"+tok)),
		"url-safe":       "Nostr " + base64.RawURLEncoding.EncodeToString(raw),
		"std unpadded":   "Nostr " + base64.RawStdEncoding.EncodeToString(raw),
		"basic url-safe": "Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+base64.RawURLEncoding.EncodeToString(raw))),
	}
	for name, hdr := range forms {
		res, err := v.Verify(hdr, Expect{URL: u, Method: "GET"})
		if err != nil {
			t.Errorf("Verify(%s) error %v", name, err)
			continue
		}
		if res.PubKey.Hex() != pk3 {
			t.Errorf("Verify(%s) pubkey %s; want %s", name, res.PubKey, pk3)
		}
	}
}

func TestVerifyRefuses(t *testing.T) {
	const u = "http://127.0.0.1:3000/query"
	body := []byte(`[{"kinds":[1]}]`)
	k := key(t, k3)
	sign := func(mut func(*nostr.Event)) string {
		evt, err := Event(k, u, "POST", Options{Now: t0, Body: body, Nonce: true})
		if err != nil {
			t.Fatal(err)
		}
		if mut != nil {
			mut(evt)
			if err := k.SignEvent(evt); err != nil {
				t.Fatal(err)
			}
		}
		return "Nostr " + Encode(evt)
	}
	good := sign(nil)
	tampered := func() string {
		evt, _ := ParseHeader(good)
		evt.Content = "changed"
		return "Nostr " + Encode(evt)
	}()
	badSig := func() string {
		evt, _ := ParseHeader(good)
		evt.Sig = strings.Repeat("0", 128)
		return "Nostr " + Encode(evt)
	}()
	want := Expect{URL: u, Method: "POST", Body: body}
	cases := []struct {
		name string
		hdr  string
		now  time.Time
		want Expect
		err  error
		text string
	}{
		{"empty", "", t0, want, ErrNoToken, "no Authorization header"},
		{"bearer", "Bearer abc", t0, want, ErrNoToken, "neither Nostr nor Basic"},
		{"not base64", "Nostr !!!!", t0, want, ErrMalformed, "not base64"},
		{"not utf8", "Nostr " + base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe}), t0, want, ErrMalformed, "not UTF-8"},
		{"not json", "Nostr " + base64.StdEncoding.EncodeToString([]byte("hello")), t0, want, ErrMalformed, "not a JSON event"},
		{"basic no password", "Basic " + base64.StdEncoding.EncodeToString([]byte("user")), t0, want, ErrMalformed, "no password"},
		{"huge", "Nostr " + strings.Repeat("A", maxHeaderBytes), t0, want, ErrMalformed, "limit"},
		{"kind", sign(func(e *nostr.Event) { e.Kind = 1 }), t0, want, ErrKind, "kind 1, want 27235"},
		{"tampered", tampered, t0, want, ErrSignature, "id does not hash"},
		{"bad sig", badSig, t0, want, ErrSignature, "signature does not verify"},
		{"old", good, t0.Add(61 * time.Second), want, ErrExpired, "limit ±1m0s"},
		{"future", good, t0.Add(-61 * time.Second), want, ErrExpired, "created_at 1700000000"},
		{"other path", good, t0, Expect{URL: "http://127.0.0.1:3000/events", Method: "POST", Body: body}, ErrURL, `request is for "http://127.0.0.1:3000/events"`},
		{"other host", good, t0, Expect{URL: "http://relay.example:3000/query", Method: "POST"}, ErrURL, "token names"},
		{"other port", good, t0, Expect{URL: "http://127.0.0.1:3001/query", Method: "POST"}, ErrURL, ""},
		{"method", good, t0, Expect{URL: u, Method: "GET"}, ErrMethod, `token says "POST", request is GET`},
		{"payload", good, t0, Expect{URL: u, Method: "POST", Body: []byte("other")}, ErrPayload, "body (5 bytes)"},
		{"no payload required", sign(func(e *nostr.Event) { e.Tags = without(e.Tags, "payload") }), t0, Expect{URL: u, Method: "POST", Body: body, RequirePayload: true}, ErrPayload, "no payload tag"},
		{"two u", sign(func(e *nostr.Event) { e.Tags = append(e.Tags, nostr.Tag{"u", u}) }), t0, want, ErrMalformed, `2 "u" tags`},
		{"no method", sign(func(e *nostr.Event) { e.Tags = without(e.Tags, "method") }), t0, want, ErrMalformed, `no "method" tag`},
	}
	for _, c := range cases {
		v := Verifier{Now: at(c.now)}
		_, err := v.Verify(c.hdr, c.want)
		if !errors.Is(err, c.err) {
			t.Errorf("%s: Verify error %v; want %v", c.name, err, c.err)
			continue
		}
		if !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: Verify error %q; want it to contain %q", c.name, err, c.text)
		}
	}
	// Boundaries and relaxations that must pass.
	for name, c := range map[string]struct {
		now  time.Time
		want Expect
	}{
		"60 s old":       {t0.Add(60 * time.Second), want},
		"60 s ahead":     {t0.Add(-60 * time.Second), want},
		"localhost":      {t0, Expect{URL: "http://localhost:3000/query", Method: "POST", Body: body}},
		"ipv6 loopback":  {t0, Expect{URL: "http://[::1]:3000/query/", Method: "post", Body: body}},
		"no method":      {t0, Expect{URL: u}},
		"no body known":  {t0, Expect{URL: "HTTP://127.0.0.1:3000/query", Method: "POST"}},
		"payload absent": {t0, Expect{URL: u, Method: "POST", Body: body}},
	} {
		v := Verifier{Now: at(c.now)}
		hdr := good
		if name == "payload absent" {
			hdr = sign(func(e *nostr.Event) { e.Tags = without(e.Tags, "payload") })
		}
		if _, err := v.Verify(hdr, c.want); err != nil {
			t.Errorf("%s: Verify error %v; want success", name, err)
		}
	}
}

func TestReplay(t *testing.T) {
	const u = "http://127.0.0.1/query"
	seen := NewSeenCache(0, 0)
	v := Verifier{Now: at(t0), Seen: seen}
	h, _ := Header(key(t, k3), u, "POST", Options{Now: t0, Nonce: true})
	if _, err := v.Verify(h, Expect{URL: u, Method: "POST"}); err != nil {
		t.Fatal(err)
	}
	_, err := v.Verify(h, Expect{URL: u, Method: "POST"})
	if !errors.Is(err, ErrReplay) || !strings.Contains(err.Error(), "replay detected") {
		t.Errorf("second Verify = %v; want replay", err)
	}
	// A refused token does not take a cache slot.
	h2, _ := Header(key(t, k3), u, "POST", Options{Now: t0, Nonce: true})
	if _, err := v.Verify(h2, Expect{URL: u, Method: "GET"}); !errors.Is(err, ErrMethod) {
		t.Fatalf("Verify(wrong method) = %v", err)
	}
	if _, err := v.Verify(h2, Expect{URL: u, Method: "POST"}); err != nil {
		t.Errorf("Verify after a refused attempt = %v; want success", err)
	}
	// Without a cache (git routes) the same token passes twice.
	git := Verifier{Now: at(t0)}
	for i := range 2 {
		if _, err := git.Verify(h, Expect{URL: u}); err != nil {
			t.Errorf("git-style Verify #%d = %v", i, err)
		}
	}
}

// TestSharedClaim is the claim several servers share: two verifiers with
// their own caches and one Shared store accept a token once between them,
// Request hands Shared the request's context, and a token refused
// earlier never reaches Shared.
func TestSharedClaim(t *testing.T) {
	const u = "http://127.0.0.1/query"
	var mu sync.Mutex
	store := map[string]bool{}
	type ctxKey struct{}
	var sawCtx bool
	shared := func(ctx context.Context, id string) bool {
		mu.Lock()
		defer mu.Unlock()
		sawCtx = sawCtx || ctx.Value(ctxKey{}) != nil
		if store[id] {
			return false
		}
		store[id] = true
		return true
	}
	a := Verifier{Now: at(t0), Seen: NewSeenCache(0, 0), Shared: shared}
	b := Verifier{Now: at(t0), Seen: NewSeenCache(0, 0), Shared: shared}
	h, _ := Header(key(t, k3), u, "POST", Options{Now: t0, Nonce: true})
	req := httptest.NewRequest("POST", u, nil).WithContext(context.WithValue(context.Background(), ctxKey{}, true))
	req.Header.Set("Authorization", h)
	if _, err := a.Request(req, Expect{URL: u, Method: "POST"}); err != nil {
		t.Fatalf("first server: %v", err)
	}
	if !sawCtx {
		t.Error("Shared did not get the request's context")
	}
	_, err := b.Verify(h, Expect{URL: u, Method: "POST"})
	if !errors.Is(err, ErrReplay) || !strings.Contains(err.Error(), "another server") {
		t.Errorf("second server = %v; want a replay used on another server", err)
	}
	h2, _ := Header(key(t, k3), u, "POST", Options{Now: t0, Nonce: true})
	if _, err := a.Verify(h2, Expect{URL: u, Method: "GET"}); !errors.Is(err, ErrMethod) {
		t.Fatalf("Verify(wrong method) = %v", err)
	}
	if len(store) != 1 {
		t.Errorf("shared store holds %d ids; want 1: a refused token is not claimed", len(store))
	}
}

func TestNonceDistinct(t *testing.T) {
	k := key(t, k3)
	a, _ := Event(k, "http://x/", "GET", Options{Now: t0, Nonce: true})
	b, _ := Event(k, "http://x/", "GET", Options{Now: t0, Nonce: true})
	if a.ID == b.ID {
		t.Error("two nonced events share an id")
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if n := a.Tags.Find("nonce"); n == nil || !uuid.MatchString(n[1]) {
		t.Errorf("nonce tag %v is not a UUID v4", n)
	}
	c, _ := Event(k, "http://x/", "GET", Options{Now: t0, Tags: nostr.Tags{{"auth", "a", "", "b"}}})
	if last := c.Tags[len(c.Tags)-1]; last[0] != "auth" || len(c.Tags) != 3 {
		t.Errorf("extra tags = %v", c.Tags)
	}
}

func TestSeenCache(t *testing.T) {
	c := NewSeenCache(3, 10*time.Second)
	if !c.Claim("a", t0) || c.Claim("a", t0.Add(9*time.Second)) {
		t.Error("a: first claim must pass, second within ttl must fail")
	}
	if !c.Claim("a", t0.Add(10*time.Second)) {
		t.Error("a: claim after ttl must pass")
	}
	for i, id := range []string{"b", "c", "d", "e"} {
		if !c.Claim(id, t0.Add(time.Duration(11+i)*time.Second)) {
			t.Errorf("Claim(%s) failed", id)
		}
	}
	if n := c.Len(); n != 3 {
		t.Errorf("Len = %d; want the bound 3", n)
	}
	if c.Claim("e", t0.Add(15*time.Second)) {
		t.Error("e: replay within ttl passed")
	}
	for i := range 1000 { // queue compaction keeps memory bounded
		c.Claim(fmt.Sprint(i), t0.Add(time.Duration(20+i)*time.Second))
	}
	if n := c.Len(); n > 3 || len(c.queue) > 8 {
		t.Errorf("Len = %d, queue %d after churn", n, len(c.queue))
	}
}

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"HTTPS://Relay.Example.COM/git/o/r.git/": "https://relay.example.com/git/o/r.git",
		"https://relay.example.com:443/x":        "https://relay.example.com/x",
		"http://localhost:3000/query":            "http://127.0.0.1:3000/query",
		"http://[::1]:3000/query":                "http://127.0.0.1:3000/query",
		"http://127.0.0.1/":                      "http://127.0.0.1",
		"http://relay.example:8080/q?a=1#frag":   "http://relay.example:8080/q?a=1",
		"http://[2001:db8::1]/x":                 "http://[2001:db8::1]/x",
	} {
		got, err := NormalizeURL(in)
		if err != nil || got != want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/relative", "relay.example.com/x", "http://%zz"} {
		if _, err := NormalizeURL(in); err == nil {
			t.Errorf("NormalizeURL(%q) succeeded; want error", in)
		}
	}
	if SameURL("https://a.example/x", "https://b.example/x") {
		t.Error("SameURL merged distinct domains")
	}
}

func TestRepoRoot(t *testing.T) {
	for in, want := range map[string]string{
		"git/owner/repo.git/info/refs":                  "git/owner/repo.git",
		"/git/owner/repo.git/info/refs?service=x":       "/git/owner/repo.git",
		"git/owner/repo.git":                            "git/owner/repo.git",
		"/git/owner/repo.git/git-receive-pack":          "/git/owner/repo.git",
		"/git/owner/repo.git/git-upload-pack":           "/git/owner/repo.git",
		"/git/owner/repo.git/git-upload-pack/info/refs": "/git/owner/repo.git/git-upload-pack",
	} {
		if got := RepoRoot(in); got != want {
			t.Errorf("RepoRoot(%q) = %q; want %q", in, got, want)
		}
	}
	r := httptest.NewRequest("POST", "http://relay.example.com:8443/git/o/r.git/git-upload-pack", nil)
	if got, want := GitRepoURL(r, "https"), "https://relay.example.com:8443/git/o/r.git"; got != want {
		t.Errorf("GitRepoURL = %q; want %q", got, want)
	}
	r = httptest.NewRequest("POST", "http://127.0.0.1:9/query?x=1", nil)
	if got, want := RequestURL(r, "http"), "http://127.0.0.1:9/query?x=1"; got != want {
		t.Errorf("RequestURL = %q; want %q", got, want)
	}
}

func TestChallenge(t *testing.T) {
	// Pinned: git hands this line to the credential helper as wwwauth[].
	if got, want := Challenge("GET"), `Nostr realm="buzz", method="GET"`; got != want {
		t.Errorf("Challenge = %q; want %q", got, want)
	}
}

func FuzzParseHeader(f *testing.F) {
	k := key(f, k1)
	h, _ := Header(k, "https://relay.example.com/git/o/r.git", "GET", Options{Now: t0, Body: []byte("x"), Nonce: true})
	tok := strings.TrimPrefix(h, "Nostr ")
	for _, s := range []string{h, "Basic " + base64.StdEncoding.EncodeToString([]byte("nostr:"+tok)), "", "Nostr ", "Basic Og==", "Nostr e30=", "Nostr bnVsbA", "Bearer x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		evt, err := ParseHeader(in)
		if err != nil {
			if !errors.Is(err, ErrNoToken) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseHeader error %v wraps no sentinel", err)
			}
			return
		}
		again, err := ParseHeader("Nostr " + Encode(evt))
		if err != nil {
			t.Fatalf("re-parse of %s: %v", evt, err)
		}
		if again.String() != evt.String() {
			t.Fatalf("round trip changed the event:\n%s\n%s", evt, again)
		}
		(&Verifier{Now: at(t0)}).Check(evt, Expect{URL: "https://relay.example.com/git/o/r.git", Body: []byte("x")})
	})
}

func without(tags nostr.Tags, key string) nostr.Tags {
	var out nostr.Tags
	for _, tag := range tags {
		if tag[0] != key {
			out = append(out, tag)
		}
	}
	return out
}

func TestSeenCacheConcurrent(t *testing.T) {
	c := NewSeenCache(0, 0)
	var wg sync.WaitGroup
	wins := make(chan bool, 64)
	for range 64 {
		wg.Go(func() { wins <- c.Claim("same", t0) }) // each claims once and returns
	}
	wg.Wait()
	close(wins)
	n := 0
	for w := range wins {
		if w {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d concurrent claims of one id won; want exactly 1", n)
	}
}
