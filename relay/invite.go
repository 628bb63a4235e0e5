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
	"sort"
	"strings"
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
// expires or is revoked (410), and unknown tokens get 404. Only the
// SHA-256 of a token is stored, in a relay-signed
// workspace.KindInviteRecord event (d = the hash).
//
// Admitting someone to a private channel takes that channel's owner or
// admin (or the relay owner): createinvite refuses a private channel its
// caller does not administer, and a redemption checks the creator again,
// since its rights may have changed since (403, the invite kept). A relay
// --admin manages members, not channels.
//
// listinvites answers the pending invites the caller may see, each as
// {"id", "created_by", "channels", "created_at", "expires_at"} (id: the
// first inviteIDLen hex digits of the token's hash; never the token), and
// revokeinvite ["<id>"] ends one. A caller sees and revokes what it could
// have made: the relay owner every invite, an admin its own and those whose
// private channels it administers. Removing a key (disallowpubkey)
// revokes the invites it made.
const invitePath = "/invite"

// inviteIDLen is the length of an invite's id: a prefix of its token's
// SHA-256, 64 bits, unique among maxInvites with room to spare.
const inviteIDLen = 16

// inviteRecord is the content of a workspace.KindInviteRecord event.
type inviteRecord struct {
	Channels   []string `json:"channels"`
	ExpiresAt  int64    `json:"expires_at"`
	CreatedBy  string   `json:"created_by"`
	CreatedAt  int64    `json:"created_at,omitempty"`
	RedeemedBy string   `json:"redeemed_by,omitempty"`
	RedeemedAt int64    `json:"redeemed_at,omitempty"`
	RevokedBy  string   `json:"revoked_by,omitempty"`
	RevokedAt  int64    `json:"revoked_at,omitempty"`
}

// pending reports whether the invite may still be redeemed at now.
func (rec inviteRecord) pending(now int64) bool {
	return rec.RedeemedBy == "" && rec.RevokedAt == 0 && rec.ExpiresAt > now
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
		if !workspace.IsChannelID(id) {
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
	if id := r.unadmitted(who, chans); id != "" {
		return nil, fmt.Errorf("createinvite: channel %s is private and you are not its owner or admin; ask one of them for the invite", id)
	}
	raw := make([]byte, inviteTokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("createinvite: make token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	now := r.cfg.Now()
	rec := inviteRecord{Channels: chans, ExpiresAt: now.Add(ttl).Unix(), CreatedBy: who, CreatedAt: now.Unix()}
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
		"id":         key[:inviteIDLen],
		"expires_at": rec.ExpiresAt,
	}, nil
}

// unadmitted returns the first private channel of ids that who may not
// admit anyone to (not its owner or admin, nor the relay owner), or "".
func (r *Relay) unadmitted(who string, ids []string) string {
	for _, id := range ids {
		if ch, ok := r.chans.get(id); ok && !ch.deleted && ch.private && !r.admin(id, who) {
			return id
		}
	}
	return ""
}

// mayManageInvite reports whether who may see and revoke rec: the relay
// owner, its creator, or an admin who could have made it.
func (r *Relay) mayManageInvite(who string, rec inviteRecord) bool {
	return who == r.owner && r.owner != "" || rec.CreatedBy == who || r.unadmitted(who, rec.Channels) == ""
}

// inviteEntry is one row of listinvites.
type inviteEntry struct {
	ID        string   `json:"id"`
	CreatedBy string   `json:"created_by"`
	Channels  []string `json:"channels"`
	CreatedAt int64    `json:"created_at"`
	ExpiresAt int64    `json:"expires_at"`
}

// listInvites is the listinvites management method: the pending invites
// who may manage, oldest first.
func (r *Relay) listInvites(who string) []inviteEntry {
	now := r.cfg.Now().Unix()
	r.inv.mu.Lock()
	out := make([]inviteEntry, 0, len(r.inv.byKey))
	for key, rec := range r.inv.byKey {
		if rec.pending(now) && r.mayManageInvite(who, rec) {
			chans := append([]string{}, rec.Channels...)
			out = append(out, inviteEntry{ID: key[:inviteIDLen], CreatedBy: rec.CreatedBy, Channels: chans, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt})
		}
	}
	r.inv.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// revokeInvite is the revokeinvite management method: params ["<id>"],
// the id listinvites shows (or the whole token hash).
func (r *Relay) revokeInvite(ctx context.Context, who string, params []json.RawMessage) (any, error) {
	var id string
	if len(params) != 1 || json.Unmarshal(params[0], &id) != nil {
		return nil, fmt.Errorf(`revokeinvite: params must be ["<invite id>"], an id listinvites shows`)
	}
	if len(id) < inviteIDLen || len(id) > sha256.Size*2 || strings.Trim(id, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("revokeinvite: invite id %.80q is not %d to %d lower-case hex digits; listinvites shows the ids", id, inviteIDLen, sha256.Size*2)
	}
	r.inv.mu.Lock()
	defer r.inv.mu.Unlock()
	key, rec, found := "", inviteRecord{}, false
	for k, v := range r.inv.byKey {
		if strings.HasPrefix(k, id) {
			key, rec, found = k, v, true
			break
		}
	}
	now := r.cfg.Now().Unix()
	switch {
	case !found || !r.mayManageInvite(who, rec):
		return nil, fmt.Errorf("revokeinvite: no invite %s that you may revoke; listinvites shows them", id)
	case rec.RevokedAt != 0:
		return true, nil
	case rec.RedeemedBy != "":
		return nil, fmt.Errorf("revokeinvite: invite %s was already used", id)
	case rec.ExpiresAt <= now:
		return nil, fmt.Errorf("revokeinvite: invite %s has already expired", id)
	}
	if err := r.revokeLocked(ctx, key, rec, who); err != nil {
		return nil, fmt.Errorf("revokeinvite: %w", err)
	}
	return true, nil
}

// revokeLocked marks the invite of token hash key revoked by who, in the
// database first when instances share one (so no instance redeems it
// after), then in its record; r.inv.mu is held.
func (r *Relay) revokeLocked(ctx context.Context, key string, rec inviteRecord, who string) error {
	rec.RevokedBy, rec.RevokedAt = who, r.cfg.Now().Unix()
	if r.fan != nil {
		if err := r.fan.claimInvite(ctx, key, "", rec.RevokedAt); errors.Is(err, errInviteSpent) {
			return fmt.Errorf("invite %s was already used", key[:inviteIDLen])
		} else if err != nil {
			return err
		}
	}
	if err := r.saveRecord(ctx, workspace.KindInviteRecord, key, rec); err != nil {
		return err
	}
	r.inv.byKey[key] = rec
	return nil
}

// revokeInvitesBy revokes every pending invite pk made, when pk is
// removed from the relay.
func (r *Relay) revokeInvitesBy(ctx context.Context, pk, who string) error {
	now := r.cfg.Now().Unix()
	r.inv.mu.Lock()
	defer r.inv.mu.Unlock()
	for key, rec := range r.inv.byKey {
		if rec.CreatedBy != pk || !rec.pending(now) {
			continue
		}
		if err := r.revokeLocked(ctx, key, rec, who); err != nil {
			return fmt.Errorf("revoke invite %s of %s: %w", key[:inviteIDLen], pk, err)
		}
	}
	return nil
}

// pruneInvites forgets used and expired invites; r.inv.mu is held.
func (r *Relay) pruneInvites() {
	now := r.cfg.Now().Unix()
	for key, rec := range r.inv.byKey {
		if !rec.pending(now) {
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
	case rec.RevokedAt != 0:
		return nil, http.StatusGone, "invite revoked; ask for a new invite"
	case rec.ExpiresAt <= r.cfg.Now().Unix():
		return nil, http.StatusGone, fmt.Sprintf("invite expired at %s; ask for a new invite", time.Unix(rec.ExpiresAt, 0).UTC().Format(time.RFC3339))
	case !r.mem.isAdmin(rec.CreatedBy):
		return nil, http.StatusGone, "invite revoked: the key that made it may no longer invite; ask for a new invite"
	}
	if id := r.unadmitted(rec.CreatedBy, rec.Channels); id != "" {
		return nil, http.StatusForbidden, "restricted: the invite's maker is no longer an owner or admin of private channel " + id + "; ask for a new invite"
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
	return r.channelCommand(ctx, workspace.KindAddUser, id, nostr.Tags{{"h", id}, {"p", pk, "", roleMember}})
}

// channelCommand signs a group command of kind on channel id with the
// relay key, stores it and applies it as an admin's would be.
func (r *Relay) channelCommand(ctx context.Context, kind int, id string, tags nostr.Tags) error {
	ev := nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Tags: tags, Content: ""}
	if err := ev.Sign(r.secret); err != nil {
		return fmt.Errorf("buzz-relay: sign kind %d for %s: %w", kind, id, err)
	}
	ctx = internal(ctx)
	if err := r.store.SaveEvent(ctx, &ev); err != nil {
		return fmt.Errorf("buzz-relay: store kind %d for %s: %w", kind, id, err)
	}
	r.onEventSaved(ctx, &ev)
	r.broadcast(&ev)
	return nil
}
