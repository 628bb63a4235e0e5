package cli

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipoa"
)

// The members group speaks NIP-86 (relay management) to the relay
// through the relay client's Manage. Only the relay's owner and admins
// may use it.

func needPubkey(in *inv) (string, error) {
	v, err := need(in, "pubkey")
	if err != nil {
		return "", err
	}
	return parsePubkey(v)
}

// memberCmd runs a NIP-86 method taking [pubkey, reason?].
func memberCmd(method string, withReason bool) func(*inv) error {
	return func(in *inv) error {
		pk, err := needPubkey(in)
		if err != nil {
			return err
		}
		params := []any{pk}
		if withReason && in.p.str("reason") != "" {
			params = append(params, in.p.str("reason"))
		}
		if _, err := in.c.Manage(in.ctx, method, false, params...); err != nil {
			return err
		}
		return writeJSON(in.out, map[string]any{"pubkey": pk, "ok": true})
	}
}

func runMembersList(in *inv) error {
	method := "listallowedpubkeys"
	if in.p.boolean("banned") {
		method = "listbannedpubkeys"
	}
	res, err := in.c.Manage(in.ctx, method, false)
	if err != nil {
		return err
	}
	rows := make([]struct {
		Pubkey string `json:"pubkey"`
		Reason string `json:"reason"`
	}, 0)
	if err := json.Unmarshal(res, &rows); err != nil {
		return otherErr("unreadable %s result: %v", method, err)
	}
	return writeJSON(in.out, rows)
}

func runMembersInvite(in *inv) error {
	opts := map[string]any{}
	if chans := in.p.list("channel"); len(chans) > 0 {
		ids := make([]string, 0, len(chans))
		for _, c := range chans {
			id, err := parseUUID(c)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		opts["channels"] = ids
	}
	if v := in.p.str("expires"); in.p.has("expires") {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > maxInviteExpiry {
			return userErr("--expires must be a duration from 1s to %s, like 24h or 30m, got %q", maxInviteExpiry, v)
		}
		opts["expires_in"] = int64(d / time.Second)
	}
	res, err := in.c.Manage(in.ctx, "createinvite", true, opts)
	if err != nil {
		return err
	}
	var out struct {
		URL       string `json:"url"`
		Token     string `json:"token"`
		ID        string `json:"id,omitempty"`
		ExpiresAt int64  `json:"expires_at"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.URL == "" {
		return otherErr("unreadable createinvite result %.200s", res)
	}
	if in.compact {
		_, err := io.WriteString(in.out, out.URL+"\n")
		return err
	}
	return writeJSON(in.out, out)
}

// runMembersInvites lists the pending invites (listinvites) or, with
// --revoke, revokes one (revokeinvite).
func runMembersInvites(in *inv) error {
	if in.p.has("revoke") {
		id := strings.ToLower(strings.TrimSpace(in.p.str("revoke")))
		if len(id) < minInviteID || len(id) > maxInviteID || strings.Trim(id, "0123456789abcdef") != "" {
			return userErr("--revoke %q: want an invite id, %d to %d hex digits, as buzz members invites lists them", in.p.str("revoke"), minInviteID, maxInviteID)
		}
		if _, err := in.c.Manage(in.ctx, "revokeinvite", false, id); err != nil {
			return err
		}
		return writeJSON(in.out, map[string]any{"id": id, "revoked": true})
	}
	res, err := in.c.Manage(in.ctx, "listinvites", false)
	if err != nil {
		return err
	}
	rows := make([]struct {
		ID        string   `json:"id"`
		CreatedBy string   `json:"created_by"`
		Channels  []string `json:"channels"`
		CreatedAt int64    `json:"created_at"`
		ExpiresAt int64    `json:"expires_at"`
	}, 0)
	if err := json.Unmarshal(res, &rows); err != nil {
		return otherErr("unreadable listinvites result: %v", err)
	}
	for i := range rows {
		if rows[i].Channels == nil {
			rows[i].Channels = []string{}
		}
	}
	return writeJSON(in.out, rows)
}

// runAgentsAttest mints a NIP-OA attestation by the CLI's key (the owner)
// for --agent, under --kind and --until, and prints the tag's JSON.
func runAgentsAttest(in *inv) error {
	v, err := need(in, "agent")
	if err != nil {
		return err
	}
	agentHex, err := parsePubkey(v)
	if err != nil {
		return err
	}
	agent, err := nostrkey.ParsePublic(agentHex)
	if err != nil {
		return userErr("--agent %q is not a valid public key: %v", v, err)
	}
	if agentHex == in.pubkey {
		return userErr("--agent is your own key; an owner cannot attest itself (NIP-OA)")
	}
	conds, err := attestConditions(in.p.str("kinds"), in.p.str("until"), time.Now())
	if err != nil {
		return err
	}
	tag, err := nipoa.Sign(in.key, agent, conds)
	if err != nil {
		return otherErr("sign attestation: %v", err)
	}
	if _, err := io.WriteString(in.out, tag.JSON()+"\n"); err != nil {
		return otherErr("write: %v", err)
	}
	return nil
}

// attestConditions builds the NIP-OA conditions for --kinds and --until.
// Every clause of an attestation must hold for each event, so it can name
// at most one kind.
func attestConditions(kinds, until string, now time.Time) (string, error) {
	var clauses []string
	if kinds = strings.TrimSpace(kinds); kinds != "" {
		list := strings.Split(kinds, ",")
		if len(list) > 1 {
			return "", userErr("--kinds %q: an attestation's clauses must all hold, so it can name only one kind; omit --kinds to allow every kind", kinds)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(list[0]), 10, 16)
		if err != nil {
			return "", userErr("--kinds %q: want one event kind from 0 to 65535", kinds)
		}
		clauses = append(clauses, "kind="+strconv.FormatUint(n, 10))
	}
	if until = strings.TrimSpace(until); until != "" {
		t, err := parseUntil(until, now)
		if err != nil {
			return "", err
		}
		clauses = append(clauses, "created_at<"+strconv.FormatInt(t, 10))
	}
	return strings.Join(clauses, "&"), nil
}

// parseUntil reads unix seconds, an RFC 3339 time or a duration from now.
func parseUntil(s string, now time.Time) (int64, error) {
	var t int64
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		t = n
	} else if ts, err := time.Parse(time.RFC3339, s); err == nil {
		t = ts.Unix()
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		t = now.Add(d).Unix()
	} else {
		return 0, userErr("--until %q: want unix seconds, an RFC 3339 time (2026-12-31T00:00:00Z) or a duration from now (720h)", s)
	}
	if t <= now.Unix() || t > maxAttestUntil {
		return 0, userErr("--until %q: must be in the future and before %d", s, int64(maxAttestUntil))
	}
	return t, nil
}
