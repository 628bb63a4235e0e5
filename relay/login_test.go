package relay

import (
	"bytes"
	"database/sql"
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

// TestAttackLoginLinkAcrossInstances: with --db, a sign-in link minted on
// one instance (in-process, as buzzbox up mints it) was known to that
// instance alone. It must be accepted once by another, built instance and
// refused everywhere after; of many requests racing through two built
// instances one wins; expiry and the maxLogins cap hold across
// instances; and the database never holds the key in the clear.
func TestAttackLoginLinkAcrossInstances(t *testing.T) {
	c := newCluster(t)
	ins := c.start(2)
	var mu sync.Mutex
	var skew time.Duration
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	a := startRelay(t, Config{DB: c.db, KeyFile: c.key, Owner: c.owner.pk, Now: clock})
	// The posts below keep connections to the other instances, which
	// outlive this relay: close them before its leak check runs.
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	want, _ := nip19.EncodePrivateKey(c.owner.sk)
	mint := func() string {
		t.Helper()
		tok, err := a.LoginToken(c.owner.sk)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	tok := mint()
	if status, _, out := postLogin(t, ins[0].http(), tokenBody(tok)); status != http.StatusOK || out["nsec"] != want {
		t.Fatalf("link minted on A, used on B = %d %v; want 200 with the owner's nsec", status, out)
	}
	for name, base := range map[string]string{"C": ins[1].http(), "A": a.HTTPURL(), "B again": ins[0].http()} {
		if status, _, out := postLogin(t, base, tokenBody(tok)); status != http.StatusGone || out["nsec"] != "" {
			t.Errorf("spent link on %s = %d %v; want 410", name, status, out)
		}
	}

	tok = mint()
	var won, gone, other int
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := http.Post(ins[i%2].http()+loginPath, "application/json", strings.NewReader(tokenBody(tok)))
			if err != nil {
				return
			}
			res.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			switch res.StatusCode {
			case http.StatusOK:
				won++
			case http.StatusGone:
				gone++
			default:
				other++
			}
		}()
	}
	wg.Wait()
	if won != 1 || gone != 15 {
		t.Errorf("16 racing uses through two instances: %d won, %d refused 410, %d other; want 1 and 15", won, gone, other)
	}

	db, err := sql.Open("postgres", c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tok = mint()
	var sealed []byte
	if err := db.QueryRow(`SELECT sealed FROM buzz_login WHERE token_hash = $1`, tokenHash(tok)).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if len(sealed) == 0 || bytes.Contains(sealed, []byte(want)) || bytes.Contains(sealed, []byte(c.owner.sk)) {
		t.Errorf("the database holds an unspent link's key as %q; want it sealed", sealed)
	}
	postLogin(t, ins[1].http(), tokenBody(tok))
	if err := db.QueryRow(`SELECT sealed FROM buzz_login WHERE token_hash = $1`, tokenHash(tok)).Scan(&sealed); err != nil || sealed != nil {
		t.Errorf("spent link's seal = %q, %v; want it wiped", sealed, err)
	}

	mu.Lock()
	skew = -loginTTL - time.Minute
	mu.Unlock()
	tok = mint()
	mu.Lock()
	skew = 0
	mu.Unlock()
	if status, _, out := postLogin(t, ins[0].http(), tokenBody(tok)); status != http.StatusGone || !strings.Contains(out["error"], "expired") {
		t.Errorf("expired link on B = %d %v; want 410 naming the expiry", status, out)
	}
	first := mint()
	for range maxLogins {
		mint()
	}
	if status, _, _ := postLogin(t, ins[1].http(), tokenBody(first)); status != http.StatusGone {
		t.Errorf("link pushed out by %d newer ones, used on C = %d; want 410", maxLogins, status)
	}
	if status, _, out := postLogin(t, ins[0].http(), tokenBody("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")); status != http.StatusNotFound || out["nsec"] != "" {
		t.Errorf("guessed token on B = %d %v; want 404", status, out)
	}
}
