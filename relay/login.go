package relay

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"buzzbox/internal/workspace/nip98"
)

// The owner's sign-in link: `buzzbox up` mints a token with LoginToken and
// prints <relay http base>/#login=<token>. The web client reads the
// fragment (which no server ever sees), clears it, and trades the token
// with POST /login, body {"token": "…"}, for {"nsec": "…"}: the key the
// token was minted for, handed to that one browser. A token works once and
// for loginTTL; a used or expired one gets 410, an unknown one 404.
// Without --db tokens live only in memory, as SHA-256 hashes next to the
// key they unlock. With --db they live in PostgreSQL (buzz_login), so a
// link minted through one instance works through any, once: one UPDATE
// spends the row, and of two instances taking it at once one finds it
// spent. The row holds the key sealed (AES-256-GCM) under a key derived
// from the token, which only the link carries, so the database alone
// does not give the key away; the seal is wiped when the token is spent.
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
	if r.fan != nil {
		if err := r.fan.mintLogin(token, nsec, r.cfg.Now()); err != nil {
			return "", fmt.Errorf("buzz-relay: login token: %w", err)
		}
		return token, nil
	}
	r.logins.mint(token, nsec, r.cfg.Now())
	return token, nil
}

// mint records token as unlocking nsec until loginTTL from now.
func (l *logins) mint(token, nsec string, now time.Time) {
	key := sha256.Sum256([]byte(token))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey == nil {
		l.byKey = make(map[[32]byte]loginGrant)
		l.spent = make(map[[32]byte]time.Time)
	}
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
			return "", http.StatusGone, loginSpent
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
		return "", http.StatusGone, loginExpired(lg.expires)
	}
	return lg.nsec, http.StatusOK, ""
}

// The answers to a token that cannot be had (with 410 Gone, 404 Not Found).
const (
	loginSpent   = "sign-in link already used or expired; run buzzbox up again for a new one"
	loginUnknown = "sign-in link not known to this relay; run buzzbox up again for a new one"
)

func loginExpired(at time.Time) string {
	return "sign-in link expired at " + at.UTC().Format(time.RFC3339) + "; run buzzbox up again for a new one"
}

// mintLogin records token in the database as unlocking nsec until
// loginTTL from now. Tokens past their expiry by loginTTL are swept, and
// beyond maxLogins outstanding the oldest are spent, as in memory.
func (f *fanout) mintLogin(token, nsec string, now time.Time) error {
	key := tokenHash(token)
	sealed, err := sealLogin(token, key, nsec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), fanoutFetchTimeout)
	defer cancel()
	db := f.pg.DB
	if _, err := db.ExecContext(ctx, `DELETE FROM buzz_login WHERE expires_ns < $1`, now.Add(-loginTTL).UnixNano()); err != nil {
		return fmt.Errorf("sweep old sign-in links in PostgreSQL: %w", err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE buzz_login SET spent_ns = $1, sealed = NULL WHERE token_hash IN
  (SELECT token_hash FROM buzz_login WHERE spent_ns IS NULL ORDER BY minted_ns DESC, token_hash OFFSET $2)`, now.UnixNano(), maxLogins-1); err != nil {
		return fmt.Errorf("retire the oldest sign-in links in PostgreSQL: %w", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO buzz_login (token_hash, sealed, minted_ns, expires_ns) VALUES ($1, $2, $3, $4)`,
		key, sealed, now.UnixNano(), now.Add(loginTTL).UnixNano()); err != nil {
		return fmt.Errorf("record the sign-in link in PostgreSQL: %w", err)
	}
	return nil
}

// takeLogin spends token in the database: the key it unlocks, or the HTTP
// status and reason. The row is locked, checked unspent and spent in one
// statement, so one of several instances taking it at once gets the key.
func (f *fanout) takeLogin(ctx context.Context, token string, now time.Time) (string, int, string) {
	key := tokenHash(token)
	ctx, cancel := context.WithTimeout(ctx, fanoutFetchTimeout)
	defer cancel()
	var sealed []byte
	var expires int64
	err := f.pg.DB.QueryRowContext(ctx, `WITH t AS (SELECT token_hash, sealed, expires_ns FROM buzz_login WHERE token_hash = $1 AND spent_ns IS NULL FOR UPDATE)
UPDATE buzz_login AS l SET spent_ns = $2, sealed = NULL FROM t WHERE l.token_hash = t.token_hash RETURNING t.sealed, t.expires_ns`,
		key, now.UnixNano()).Scan(&sealed, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		var one int
		err = f.pg.DB.QueryRowContext(ctx, `SELECT 1 FROM buzz_login WHERE token_hash = $1`, key).Scan(&one)
		switch {
		case err == nil:
			return "", http.StatusGone, loginSpent
		case errors.Is(err, sql.ErrNoRows):
			return "", http.StatusNotFound, loginUnknown
		}
	}
	if err != nil {
		f.log.Error("spend sign-in link", "err", err)
		return "", http.StatusInternalServerError, "error: cannot read the sign-in link from the database; try again"
	}
	if at := time.Unix(0, expires); !now.Before(at) {
		return "", http.StatusGone, loginExpired(at)
	}
	nsec, err := openLogin(token, key, sealed)
	if err != nil {
		f.log.Error("spend sign-in link", "err", err)
		return "", http.StatusInternalServerError, "error: the sign-in link's record does not open; run buzzbox up again for a new one"
	}
	return nsec, http.StatusOK, ""
}

// loginSeal is the AES-256-GCM cipher for token's stored key: its key is
// SHA-256 of a label and the token, unrelated to the token's lookup hash.
func loginSeal(token string) (cipher.AEAD, error) {
	k := sha256.Sum256([]byte("buzz-relay sign-in seal\x00" + token))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealLogin seals nsec for token, bound to its hash key: nonce, then
// ciphertext and tag.
func sealLogin(token, key, nsec string) ([]byte, error) {
	aead, err := loginSeal(token)
	if err != nil {
		return nil, fmt.Errorf("seal the key: %w", err)
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal the key: random: %w", err)
	}
	return aead.Seal(nonce, nonce, []byte(nsec), []byte(key)), nil
}

// openLogin opens what sealLogin sealed.
func openLogin(token, key string, sealed []byte) (string, error) {
	aead, err := loginSeal(token)
	if err != nil {
		return "", fmt.Errorf("open the key: %w", err)
	}
	if len(sealed) < aead.NonceSize() {
		return "", errors.New("open the key: sealed record too short")
	}
	nonce, box := sealed[:aead.NonceSize()], sealed[aead.NonceSize():]
	b, err := aead.Open(nil, nonce, box, []byte(key))
	if err != nil {
		return "", fmt.Errorf("open the key: %w", err)
	}
	return string(b), nil
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
	var nsec, msg string
	var status int
	if r.fan != nil {
		nsec, status, msg = r.fan.takeLogin(req.Context(), in.Token, r.cfg.Now())
	} else {
		nsec, status, msg = r.logins.take(in.Token, r.cfg.Now())
	}
	if status != http.StatusOK {
		r.log.Info("sign-in link refused", "status", status)
		writeError(w, status, msg)
		return
	}
	r.log.Info("sign-in link used")
	writeJSON(w, http.StatusOK, map[string]string{"nsec": nsec})
}

// loginLinkPath is where a signed-in browser mints a sign-in link for its
// own key, to sign in on another device: POST {"nsec": "…"} under a NIP-98
// token signed by that same key, for {"token": "…", "expires_in": s}. The
// token is one of LoginToken's (sealed, one use, loginTTL); the page makes
// <base>/#login=<token> of it, so the key travels in no URL. Only the
// key's holder can mint a link for it, and only a relay member (or anyone
// on an --open relay): the NIP-98 signer must be the key in the body.
const loginLinkPath = "/login/new"

func (r *Relay) serveLoginLink(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	body, ok := readPost(w, req, maxLoginBody)
	if !ok {
		return
	}
	res, err := r.verifyPost(req, body, loginLinkPath, false)
	if err != nil {
		if errors.Is(err, nip98.ErrNoToken) {
			w.Header().Set("WWW-Authenticate", nip98.Challenge(http.MethodPost))
		}
		writeError(w, http.StatusUnauthorized, "NIP-98: "+err.Error()+"; sign a kind 27235 event with the key the link is for, u = this relay's /login/new URL, method POST and a payload tag")
		return
	}
	var in struct {
		Nsec string `json:"nsec"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.Nsec == "" {
		writeError(w, http.StatusBadRequest, `invalid: body must be {"nsec":"<the signer's secret key>"}`)
		return
	}
	sk := in.Nsec
	if prefix, v, err := nip19.Decode(in.Nsec); err == nil && prefix == "nsec" {
		sk, _ = v.(string)
	}
	pk, err := nostr.GetPublicKey(sk)
	if err != nil || !nostr.IsValid32ByteHex(sk) || pk != res.PubKey.Hex() {
		writeError(w, http.StatusForbidden, "restricted: the key in the body is not the key that signed the request; a link can only be made for one's own key")
		return
	}
	c := caller{pubkey: pk}
	if r.banned(c) || !(r.cfg.Open || pk == r.owner || r.member(c)) {
		writeError(w, http.StatusForbidden, "restricted: not a relay member")
		return
	}
	token, err := r.LoginToken(sk)
	if err != nil {
		r.log.Error("mint sign-in link", "err", err)
		writeError(w, http.StatusInternalServerError, "error: cannot make the sign-in link; try again")
		return
	}
	r.log.Info("sign-in link minted by its key", "pubkey", pk)
	writeJSON(w, http.StatusOK, map[string]any{"token": token, "expires_in": int(loginTTL / time.Second)})
}
