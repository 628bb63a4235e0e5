package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr/nip19"
)

// postLogin sends POST /login with body and returns status, headers and
// the decoded answer.
func postLogin(t *testing.T, base, body string) (int, http.Header, map[string]string) {
	t.Helper()
	res, err := http.Post(base+loginPath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	var out map[string]string
	json.Unmarshal(b, &out)
	return res.StatusCode, res.Header, out
}

func tokenBody(tok string) string {
	b, _ := json.Marshal(map[string]string{"token": tok})
	return string(b)
}

// TestLoginTokenWorksOnce: the sign-in link hands over the key once; the
// second use is refused with 410 and never shows the key again.
func TestLoginTokenWorksOnce(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	tok, err := r.LoginToken(owner.sk)
	if err != nil {
		t.Fatal(err)
	}
	status, hdr, out := postLogin(t, r.HTTPURL(), tokenBody(tok))
	want, _ := nip19.EncodePrivateKey(owner.sk)
	if status != 200 || out["nsec"] != want {
		t.Fatalf("POST /login = %d %v; want 200 with the owner's nsec", status, out)
	}
	if hdr.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control = %q; want no-store on a response holding a key", hdr.Get("Cache-Control"))
	}
	status, _, out = postLogin(t, r.HTTPURL(), tokenBody(tok))
	if status != http.StatusGone || out["nsec"] != "" || !strings.Contains(out["error"], "already used") {
		t.Errorf("second POST /login = %d %v; want 410 naming the reuse", status, out)
	}
	// An nsec works as the key too.
	tok2, err := r.LoginToken(want)
	if err != nil {
		t.Fatal(err)
	}
	if status, _, out := postLogin(t, r.HTTPURL(), tokenBody(tok2)); status != 200 || out["nsec"] != want {
		t.Errorf("token minted from an nsec: %d %v", status, out)
	}
}

// TestAttackLoginTokenRace: many parallel redemptions of one token; the
// key goes out exactly once.
func TestAttackLoginTokenRace(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	tok, _ := r.LoginToken(owner.sk)
	var mu sync.Mutex
	got := 0
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := http.Post(r.HTTPURL()+loginPath, "application/json", strings.NewReader(tokenBody(tok)))
			if err != nil {
				return
			}
			defer res.Body.Close()
			if res.StatusCode == 200 {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got != 1 {
		t.Errorf("%d redemptions succeeded; want exactly 1", got)
	}
}

// TestAttackLoginTokenGuessed: unknown tokens, other methods and bad
// bodies get nothing.
func TestAttackLoginTokenGuessed(t *testing.T) {
	owner := newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	r.LoginToken(owner.sk)
	if status, _, out := postLogin(t, r.HTTPURL(), tokenBody("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")); status != 404 || out["nsec"] != "" {
		t.Errorf("guessed token = %d %v; want 404", status, out)
	}
	for _, body := range []string{"", "{}", `{"token":""}`, "not json", `{"token":7}`} {
		if status, _, out := postLogin(t, r.HTTPURL(), body); status != 400 || out["nsec"] != "" {
			t.Errorf("body %q = %d %v; want 400", body, status, out)
		}
	}
	res, err := http.Get(r.HTTPURL() + loginPath)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /login = %d; want 405", res.StatusCode)
	}
	big := `{"token":"` + strings.Repeat("A", maxLoginBody) + `"}`
	res, err = http.Post(r.HTTPURL()+loginPath, "application/json", bytes.NewReader([]byte(big)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == 200 {
		t.Errorf("oversize body = 200")
	}
	if _, err := r.LoginToken("npub1notakey"); err == nil {
		t.Error("LoginToken accepted something that is not a secret key")
	}
}

// TestLoginTokenExpires: after loginTTL the link is dead (410), and
// minting more than maxLogins forgets the oldest.
func TestLoginTokenExpires(t *testing.T) {
	owner := newKey(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := startRelay(t, Config{Owner: owner.pk, Now: clock})
	tok, _ := r.LoginToken(owner.sk)
	mu.Lock()
	now = now.Add(loginTTL + time.Second)
	mu.Unlock()
	if status, _, out := postLogin(t, r.HTTPURL(), tokenBody(tok)); status != http.StatusGone || !strings.Contains(out["error"], "expired") {
		t.Errorf("expired token = %d %v; want 410 naming the expiry", status, out)
	}
	first, _ := r.LoginToken(owner.sk)
	for range maxLogins {
		r.LoginToken(owner.sk)
	}
	if status, _, _ := postLogin(t, r.HTTPURL(), tokenBody(first)); status != http.StatusGone {
		t.Errorf("token pushed out by %d newer ones = %d; want 410", maxLogins, status)
	}
}
