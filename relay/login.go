package relay

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// The owner's sign-in link: `buzzbox up` mints a token with LoginToken and
// prints <relay http base>/#login=<token>. The web client reads the
// fragment (which no server ever sees), clears it, and trades the token
// with POST /login, body {"token": "…"}, for {"nsec": "…"}: the key the
// token was minted for, handed to that one browser. A token works once and
// for loginTTL; a used or expired one gets 410, an unknown one 404. Tokens
// live only in memory, as SHA-256 hashes next to the key they unlock.
const loginPath = "/login"

type loginGrant struct {
	nsec    string
	expires time.Time
}

// logins holds the outstanding sign-in tokens by hash. The zero value is
// ready to use.
type logins struct {
	mu    sync.Mutex
	byKey map[[32]byte]loginGrant
	spent map[[32]byte]time.Time // used or expired tokens, to answer 410, until their expiry
	order [][32]byte             // minting order, oldest first
}

// LoginToken mints a one-time sign-in token for the key secret (hex or
// nsec): POST /login with it returns the key as an nsec, once, within
// loginTTL. Print it as HTTPURL() + "/#login=" + token; the fragment keeps
// it out of server logs.
func (r *Relay) LoginToken(secret string) (string, error) {
	sk := secret
	if len(secret) > 5 && secret[:5] == "nsec1" {
		_, v, err := nip19.Decode(secret)
		if err != nil {
			return "", fmt.Errorf("buzz-relay: login token: decode nsec: %w", err)
		}
		sk, _ = v.(string)
	}
	if !nostr.IsValid32ByteHex(sk) {
		return "", fmt.Errorf("buzz-relay: login token: the key is neither 64 hex characters nor an nsec")
	}
	nsec, err := nip19.EncodePrivateKey(sk)
	if err != nil {
		return "", fmt.Errorf("buzz-relay: login token: encode nsec: %w", err)
	}
	raw := make([]byte, loginTokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("buzz-relay: login token: random: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	key := sha256.Sum256([]byte(token))
	l := &r.logins
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey == nil {
		l.byKey = make(map[[32]byte]loginGrant)
		l.spent = make(map[[32]byte]time.Time)
	}
	now := r.cfg.Now()
	for len(l.order) >= maxLogins {
		old := l.order[0]
		l.order = l.order[1:]
		if lg, ok := l.byKey[old]; ok {
			delete(l.byKey, old)
			l.spent[old] = lg.expires
		}
	}
	for k, until := range l.spent {
		if now.After(until.Add(loginTTL)) {
			delete(l.spent, k)
		}
	}
	l.byKey[key] = loginGrant{nsec: nsec, expires: now.Add(loginTTL)}
	l.order = append(l.order, key)
	return token, nil
}

// take spends token: the key it unlocks, or the HTTP status and reason.
func (l *logins) take(token string, now time.Time) (string, int, string) {
	key := sha256.Sum256([]byte(token))
	l.mu.Lock()
	defer l.mu.Unlock()
	// The map is keyed by the token's hash, so a lookup's timing says
	// nothing about the token.
	lg, ok := l.byKey[key]
	if !ok {
		if _, gone := l.spent[key]; gone {
			return "", http.StatusGone, "sign-in link already used or expired; run buzzbox up again for a new one"
		}
		return "", http.StatusNotFound, "sign-in link not known to this relay (links do not survive a restart); run buzzbox up again for a new one"
	}
	delete(l.byKey, key)
	for i, k := range l.order {
		if k == key {
			l.order = append(l.order[:i], l.order[i+1:]...)
			break
		}
	}
	l.spent[key] = lg.expires
	if !now.Before(lg.expires) {
		return "", http.StatusGone, "sign-in link expired at " + lg.expires.UTC().Format(time.RFC3339) + "; run buzzbox up again for a new one"
	}
	return lg.nsec, http.StatusOK, ""
}

func (r *Relay) serveLogin(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	body, ok := readPost(w, req, maxLoginBody)
	if !ok {
		return
	}
	var in struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.Token == "" {
		writeError(w, http.StatusBadRequest, `invalid: body must be {"token":"<sign-in token>"}`)
		return
	}
	nsec, status, msg := r.logins.take(in.Token, r.cfg.Now())
	if status != http.StatusOK {
		r.log.Info("sign-in link refused", "status", status)
		writeError(w, status, msg)
		return
	}
	r.log.Info("sign-in link used")
	writeJSON(w, http.StatusOK, map[string]string{"nsec": nsec})
}
