package relay

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
)

// Invites let an admin hand a link to someone without a key on the relay
// yet. createinvite (a NIP-86 extension) takes [{"channels": [uuid…],
// "expires_in": seconds}], both optional, and answers {"token", "url":
// "<relay http base>/#invite=<token>", "expires_at"}. The new key redeems
// it with POST /invite, body {"token": "…"}, under a NIP-98 token of its
// own (u = the relay's /invite URL, method POST, payload tag): it becomes
// a relay member and a member of the channels, and the answer is
// {"pubkey", "channels"}. A token is good once (410 after), until it
// expires (410), and unknown tokens get 404. Only the SHA-256 of a token
// is stored, in a relay-signed workspace.KindInviteRecord event (d = the hash).
const invitePath = "/invite"

// inviteRecord is the content of a workspace.KindInviteRecord event.
type inviteRecord struct {
	Channels   []string `json:"channels"`
	ExpiresAt  int64    `json:"expires_at"`
	CreatedBy  string   `json:"created_by"`
	RedeemedBy string   `json:"redeemed_by,omitempty"`
	RedeemedAt int64    `json:"redeemed_at,omitempty"`
}

// invites holds the invites not yet forgotten, by token hash.
type invites struct {
	mu    sync.Mutex // held across check, store and grant of a redemption
	byKey map[string]inviteRecord
}

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// loadInvites reads the stored invites, forgetting those long past expiry.
func (r *Relay) loadInvites() error {
	r.inv = &invites{byKey: make(map[string]inviteRecord)}
	now := r.cfg.Now()
	var stale []*nostr.Event
	err := r.loadRecords(context.Background(), workspace.KindInviteRecord, func(ev *nostr.Event) {
		var rec inviteRecord
		if json.Unmarshal([]byte(ev.Content), &rec) != nil {
			r.log.Warn("skipping unreadable invite record", "id", ev.ID)
			return
		}
		if time.Unix(rec.ExpiresAt, 0).Add(inviteKeep).Before(now) {
			stale = append(stale, ev)
			return
		}
		r.inv.byKey[ev.Tags.GetD()] = rec
	})
	for _, ev := range stale {
		r.store.DeleteEvent(internal(context.Background()), ev)
	}
	return err
}

type inviteParams struct {
	Channels  []string `json:"channels"`
	ExpiresIn *float64 `json:"expires_in"`
}

// parseInviteParams reads createinvite's params: the channel ids, in
// order and without repeats, checked for form only, and the lifetime.
func parseInviteParams(params []json.RawMessage) ([]string, time.Duration, error) {
	var p inviteParams
	if len(params) > 0 && !bytes.Equal(bytes.TrimSpace(params[0]), []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(params[0]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, 0, fmt.Errorf(`createinvite: params must be [{"channels":["<uuid>",…],"expires_in":<seconds>}]: %v`, err)
		}
	}
	ttl := defaultInviteTTL
	if p.ExpiresIn != nil {
		s := *p.ExpiresIn
		if s != math.Trunc(s) || s < 1 || s > maxInviteTTL.Seconds() {
			return nil, 0, fmt.Errorf("createinvite: expires_in must be a whole number of seconds from 1 to %d (30 days)", int64(maxInviteTTL.Seconds()))
		}
		ttl = time.Duration(s) * time.Second
	}
	if len(p.Channels) > maxInviteChannels {
		return nil, 0, fmt.Errorf("createinvite: at most %d channels per invite", maxInviteChannels)
	}
	chans := make([]string, 0, len(p.Channels))
	seen := make(map[string]bool)
	for _, id := range p.Channels {
		if !isUUID(id) {
			return nil, 0, fmt.Errorf("createinvite: channel %.40q is not a lower-case channel UUID", id)
		}
		if !seen[id] {
			seen[id] = true
			chans = append(chans, id)
		}
	}
	return chans, ttl, nil
}

// createInvite is the createinvite management method.
func (r *Relay) createInvite(req *http.Request, who string, params []json.RawMessage) (any, error) {
	chans, ttl, err := parseInviteParams(params)
	if err != nil {
		return nil, err
	}
	for _, id := range chans {
		if ch, ok := r.chans.get(id); !ok || ch.deleted {
			return nil, fmt.Errorf("createinvite: no channel %s on this relay", id)
		}
	}
	raw := make([]byte, inviteTokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("createinvite: make token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	rec := inviteRecord{Channels: chans, ExpiresAt: r.cfg.Now().Add(ttl).Unix(), CreatedBy: who}
	key := tokenHash(token)
	r.inv.mu.Lock()
	defer r.inv.mu.Unlock()
	if len(r.inv.byKey) >= maxInvites {
		r.pruneInvites()
	}
	if len(r.inv.byKey) >= maxInvites {
		return nil, fmt.Errorf("createinvite: %d invites are pending; wait for some to be used or to expire", maxInvites)
	}
	if err := r.saveRecord(req.Context(), workspace.KindInviteRecord, key, rec); err != nil {
		return nil, fmt.Errorf("createinvite: %w", err)
	}
	r.inv.byKey[key] = rec
	return map[string]any{
		"token":      token,
		"url":        r.httpBase(req) + "/#invite=" + token,
		"expires_at": rec.ExpiresAt,
	}, nil
}

// pruneInvites forgets used and expired invites; r.inv.mu is held.
func (r *Relay) pruneInvites() {
	now := r.cfg.Now().Unix()
	for key, rec := range r.inv.byKey {
		if rec.RedeemedBy != "" || rec.ExpiresAt <= now {
			delete(r.inv.byKey, key)
		}
	}
}

func (r *Relay) serveInvite(w http.ResponseWriter, req *http.Request) {
	body, ok := readPost(w, req, maxInviteBody)
	if !ok {
		return
	}
	res, err := r.verifyPost(req, body, invitePath, false)
	if err != nil {
		if errors.Is(err, nip98.ErrNoToken) {
			w.Header().Set("WWW-Authenticate", nip98.Challenge(http.MethodPost))
		}
		writeError(w, http.StatusUnauthorized, "NIP-98: "+err.Error()+"; sign a kind 27235 event with the new key, u = this relay's /invite URL, method POST and a payload tag")
		return
	}
	var in struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.Token == "" {
		writeError(w, http.StatusBadRequest, `invalid: body must be {"token":"<invite token>"}`)
		return
	}
	pk := res.PubKey.Hex()
	if r.mem.isBanned(pk) {
		writeError(w, http.StatusForbidden, banReason)
		return
	}
	chans, status, msg := r.redeem(req.Context(), in.Token, pk)
	if status != http.StatusOK {
		writeError(w, status, msg)
		return
	}
	r.log.Info("invite redeemed", "pubkey", pk, "channels", len(chans))
	writeJSON(w, http.StatusOK, map[string]any{"pubkey": pk, "channels": chans})
}

// redeem spends token for pk: marks it used, makes pk a member and adds it
// to the invite's channels that still exist.
func (r *Relay) redeem(ctx context.Context, token, pk string) ([]string, int, string) {
	key := tokenHash(token)
	r.inv.mu.Lock()
	defer r.inv.mu.Unlock()
	rec, ok := r.inv.byKey[key]
	if !ok && r.fan != nil {
		rec, ok = r.storedInvite(ctx, key) // made on another instance a moment ago
		if !ok && r.fan.inviteSpent(ctx, key) {
			// Being redeemed elsewhere: the store replaces its record
			// by deleting the old one first.
			return nil, http.StatusGone, "invite already used; ask for a new invite"
		}
	}
	switch {
	case !ok:
		return nil, http.StatusNotFound, "invite not found: check the link, or ask for a new invite"
	case rec.RedeemedBy != "":
		return nil, http.StatusGone, "invite already used; ask for a new invite"
	case rec.ExpiresAt <= r.cfg.Now().Unix():
		return nil, http.StatusGone, fmt.Sprintf("invite expired at %s; ask for a new invite", time.Unix(rec.ExpiresAt, 0).UTC().Format(time.RFC3339))
	}
	rec.RedeemedBy, rec.RedeemedAt = pk, r.cfg.Now().Unix()
	if r.fan != nil {
		// Instances share the token; the database says who spent it first.
		if err := r.fan.claimInvite(ctx, key, pk, rec.RedeemedAt); errors.Is(err, errInviteSpent) {
			return nil, http.StatusGone, "invite already used; ask for a new invite"
		} else if err != nil {
			r.log.Error("redeem invite", "err", err)
			return nil, http.StatusInternalServerError, "error: cannot record the invite as used; try again"
		}
	}
	if err := r.saveRecord(ctx, workspace.KindInviteRecord, key, rec); err != nil {
		r.log.Error("redeem invite", "err", err)
		return nil, http.StatusInternalServerError, "error: cannot record the invite as used; try again"
	}
	r.inv.byKey[key] = rec
	err := r.changeMember(ctx, pk, func(m *memberRecord) {
		m.Allowed, m.AllowReason, m.By = true, "invite", rec.CreatedBy
	})
	if err != nil {
		r.log.Error("redeem invite", "err", err)
		return nil, http.StatusInternalServerError, "error: cannot record the new member"
	}
	joined := make([]string, 0, len(rec.Channels))
	for _, id := range rec.Channels {
		if ch, ok := r.chans.get(id); !ok || ch.deleted {
			continue
		}
		joined = append(joined, id)
		if r.chans.role(id, pk) != "" {
			continue
		}
		if err := r.addToChannel(ctx, id, pk); err != nil {
			r.log.Error("redeem invite", "channel", id, "err", err)
			return nil, http.StatusInternalServerError, "error: cannot add the new member to channel " + id
		}
	}
	return joined, http.StatusOK, ""
}

// storedInvite reads the invite record of token hash key from the store.
func (r *Relay) storedInvite(ctx context.Context, key string) (inviteRecord, bool) {
	var rec inviteRecord
	found := false
	ch, err := r.store.QueryEvents(internal(ctx), nostr.Filter{
		Kinds: []int{workspace.KindInviteRecord}, Authors: []string{r.pubkey}, Tags: nostr.TagMap{"d": []string{key}}, Limit: 1,
	})
	if err != nil {
		return rec, false
	}
	for ev := range ch {
		if ev.Tags.GetD() == key && json.Unmarshal([]byte(ev.Content), &rec) == nil {
			found = true
		}
	}
	return rec, found
}

// addToChannel adds pk to channel id as a member through a relay-signed
// kind 9000, stored and applied as an admin's would be.
func (r *Relay) addToChannel(ctx context.Context, id, pk string) error {
	ev := nostr.Event{Kind: workspace.KindAddUser, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", id}, {"p", pk, "", roleMember}}, Content: ""}
	if err := ev.Sign(r.secret); err != nil {
		return fmt.Errorf("buzz-relay: sign add-member for %s: %w", id, err)
	}
	ctx = internal(ctx)
	if err := r.store.SaveEvent(ctx, &ev); err != nil {
		return fmt.Errorf("buzz-relay: store add-member for %s: %w", id, err)
	}
	r.onEventSaved(ctx, &ev)
	r.broadcast(&ev)
	return nil
}
