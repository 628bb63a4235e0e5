package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
)

// rpcReply is a NIP-86 answer as a client reads it.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

func httpBase(wsURL string) string { return "http" + strings.TrimPrefix(wsURL, "ws") }

// signedPost POSTs body to url with a NIP-98 token of k for signURL (the
// request URL when empty), with a payload tag unless noPayload.
func signedPost(t *testing.T, k testKey, url, signURL, contentType string, body []byte, opts nip98.Options) (int, []byte) {
	t.Helper()
	if signURL == "" {
		signURL = url
	}
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if k.sk != "" {
		sec, err := nostrkey.ParseSecret(k.sk)
		if err != nil {
			t.Fatal(err)
		}
		hdr, err := nip98.Header(sec, signURL, http.MethodPost, opts)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", hdr)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b
}

// manage calls a NIP-86 method on the relay at base (http://host:port) as k.
func manage(t *testing.T, base string, k testKey, method string, params ...any) (int, rpcReply) {
	t.Helper()
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"method": method, "params": params})
	status, b := signedPost(t, k, base+"/", "", contentTypeRPC, body, nip98.Options{Body: body, Nonce: true})
	var rep rpcReply
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: answer %d %q is not JSON: %v", method, status, b, err)
	}
	return status, rep
}

// mustManage calls method and fails the test unless it succeeds.
func mustManage(t *testing.T, base string, k testKey, method string, params ...any) json.RawMessage {
	t.Helper()
	status, rep := manage(t, base, k, method, params...)
	if status != http.StatusOK || rep.Error != "" {
		t.Fatalf("%s %v = %d %q; want 200 without error", method, params, status, rep.Error)
	}
	return rep.Result
}

// stopRelay ends a relay process with SIGTERM and waits for it.
func stopRelay(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

// publishAs logs k in and reports the refusal of a kind 1 event, or "".
func publishAs(t *testing.T, url string, k testKey) string {
	t.Helper()
	c := login(t, url, k)
	defer c.Close()
	if err := c.Publish(testCtx(t), signed(t, k, 1, "hello from "+k.pk[:8])); err != nil {
		return err.Error()
	}
	return ""
}

// TestAttackManagementWithoutAdmin: the management API answers only the
// owner and the admins. No token, a token without a payload tag, a token
// for another URL, a member's token and an agent of the owner's all fail.
func TestAttackManagementWithoutAdmin(t *testing.T) {
	owner, admin, member, agent, victim := newKey(t), newKey(t), newKey(t), newKey(t), newKey(t)
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", t.TempDir(), "--owner", owner.pk, "--admin", admin.pk, "--allow", member.pk+","+victim.pk)
	base := httpBase(url)
	body := []byte(`{"method":"banpubkey","params":["` + victim.pk + `"]}`)

	status, _ := signedPost(t, testKey{}, base+"/", "", contentTypeRPC, body, nip98.Options{})
	if status != http.StatusUnauthorized {
		t.Errorf("no token: status %d; want 401", status)
	}
	status, _ = signedPost(t, owner, base+"/", "", contentTypeRPC, body, nip98.Options{Nonce: true})
	if status != http.StatusUnauthorized {
		t.Errorf("owner token without payload tag: status %d; want 401", status)
	}
	status, _ = signedPost(t, owner, base+"/", "http://elsewhere.example/", contentTypeRPC, body, nip98.Options{Body: body})
	if status != http.StatusUnauthorized {
		t.Errorf("owner token for another relay: status %d; want 401", status)
	}
	if status, rep := manage(t, base, member, "banpubkey", victim.pk); status != http.StatusForbidden || !strings.Contains(rep.Error, "owner or an admin") {
		t.Errorf("member: %d %q; want 403 naming who may", status, rep.Error)
	}
	tag := attest(t, owner, agent, "")
	status, _ = signedPost(t, agent, base+"/", "", contentTypeRPC, body, nip98.Options{Body: body, Tags: nostr.Tags{tag}})
	if status != http.StatusForbidden {
		t.Errorf("agent attested by the owner: status %d; want 403", status)
	}
	if reason := publishAs(t, url, victim); reason != "" {
		t.Fatalf("victim refused after the failed bans: %s", reason)
	}
	// The admin may; the owner cannot be banned by anyone.
	var methods []string
	json.Unmarshal(mustManage(t, base, admin, "supportedmethods"), &methods)
	for _, m := range []string{"allowpubkey", "disallowpubkey", "listallowedpubkeys", "banpubkey", "unbanpubkey", "listbannedpubkeys", "createinvite", "listinvites", "revokeinvite"} {
		if !strings.Contains(strings.Join(methods, " "), m) {
			t.Errorf("supportedmethods = %v; missing %s", methods, m)
		}
	}
	if _, rep := manage(t, base, admin, "banpubkey", owner.pk); !strings.Contains(rep.Error, "cannot be banned") {
		t.Errorf("admin banning the owner: error %q; want refusal", rep.Error)
	}
	if _, rep := manage(t, base, admin, "frobnicate"); !strings.Contains(rep.Error, "unknown method") {
		t.Errorf("unknown method: error %q", rep.Error)
	}
	if _, rep := manage(t, base, admin, "allowpubkey", "not-a-key"); !strings.Contains(rep.Error, "npub") {
		t.Errorf("bad pubkey: error %q; want one naming the accepted forms", rep.Error)
	}
}

// TestMembershipSurvivesRestart: allow, disallow and ban made over NIP-86
// hold after the relay process restarts on the same data directory, and
// merge with --allow.
func TestMembershipSurvivesRestart(t *testing.T) {
	owner, fromFlag, allowed, dropped, banned := newKey(t), newKey(t), newKey(t), newKey(t), newKey(t)
	exe := testexe.Link(t, "buzz-relay")
	dir := t.TempDir()
	args := []string{"--data", dir, "--owner", owner.pk, "--allow", fromFlag.pk + "," + banned.pk}
	cmd, url := runRelayArgs(t, exe, args...)
	base := httpBase(url)
	if reason := publishAs(t, url, allowed); !strings.Contains(reason, "not a relay member") {
		t.Fatalf("before allowpubkey: %q; want not a relay member", reason)
	}
	mustManage(t, base, owner, "allowpubkey", allowed.pk, "reviewer")
	mustManage(t, base, owner, "allowpubkey", dropped.pk)
	mustManage(t, base, owner, "disallowpubkey", dropped.pk)
	mustManage(t, base, owner, "banpubkey", banned.pk, "spam")
	if _, rep := manage(t, base, owner, "disallowpubkey", fromFlag.pk); !strings.Contains(rep.Error, "--allow") {
		t.Errorf("disallowing a --allow key: %q; want the flag named", rep.Error)
	}
	stopRelay(t, cmd)

	_, url = runRelayArgs(t, exe, args...)
	base = httpBase(url)
	if reason := publishAs(t, url, allowed); reason != "" {
		t.Errorf("allowed key after restart: %s", reason)
	}
	if reason := publishAs(t, url, fromFlag); reason != "" {
		t.Errorf("--allow key after restart: %s", reason)
	}
	if reason := publishAs(t, url, dropped); !strings.Contains(reason, "not a relay member") {
		t.Errorf("disallowed key after restart: %q; want not a relay member", reason)
	}
	if reason := publishAs(t, url, banned); !strings.Contains(reason, banReason) {
		t.Errorf("banned key after restart: %q; want %q", reason, banReason)
	}
	var list []listEntry
	json.Unmarshal(mustManage(t, base, owner, "listallowedpubkeys"), &list)
	got := map[string]string{}
	for _, e := range list {
		got[e.PubKey] = e.Reason
	}
	if got[allowed.pk] != "reviewer" || got[owner.pk] != "owner" || got[fromFlag.pk] == "" {
		t.Errorf("listallowedpubkeys = %v; want owner, the --allow key and the reviewer", list)
	}
	if _, ok := got[dropped.pk]; ok {
		t.Errorf("listallowedpubkeys lists the disallowed key: %v", list)
	}
	if _, ok := got[banned.pk]; ok {
		t.Errorf("listallowedpubkeys lists the banned key: %v", list)
	}
	json.Unmarshal(mustManage(t, base, owner, "listbannedpubkeys"), &list)
	if len(list) != 1 || list[0].PubKey != banned.pk || list[0].Reason != "spam" {
		t.Errorf("listbannedpubkeys = %v; want the banned key with its reason", list)
	}
	mustManage(t, base, owner, "unbanpubkey", banned.pk)
	if reason := publishAs(t, url, banned); reason != "" {
		t.Errorf("unbanned --allow key: %s", reason)
	}
}

// TestAttackBannedKeyCutOff: banning a connected key closes its websocket
// within a second, and so the websocket of an agent it attests; after
// that neither gets in over the websocket or the HTTP bridge.
func TestAttackBannedKeyCutOff(t *testing.T) {
	owner, member, agent := newKey(t), newKey(t), newKey(t)
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", t.TempDir(), "--owner", owner.pk, "--allow", member.pk)
	base := httpBase(url)
	tag := attest(t, member, agent, "")

	mc := login(t, url, member)
	ac := connect(t, url)
	awaitChallenge(t, ac)
	if err := ac.Auth(testCtx(t), func(ev *nostr.Event) error {
		ev.Tags = append(ev.Tags, tag)
		return ev.Sign(agent.sk)
	}); err != nil {
		t.Fatalf("agent auth: %v", err)
	}
	mustPublish(t, ac, signed(t, agent, 1, "agent before", tag))
	sub, err := mc.Subscribe(testCtx(t), nostr.Filters{{Kinds: []int{1}}})
	if err != nil {
		t.Fatal(err)
	}
	<-sub.EndOfStoredEvents

	mustManage(t, base, owner, "banpubkey", member.pk, "abuse")
	for name, c := range map[string]*nostr.Relay{"banned key": mc, "agent of the banned key": ac} {
		select {
		case <-c.Context().Done():
		case <-time.After(time.Second):
			t.Errorf("%s: websocket still open a second after banpubkey", name)
		}
	}
	if reason := publishAs(t, url, member); !strings.Contains(reason, banReason) {
		t.Errorf("banned key reconnecting: %q; want %q", reason, banReason)
	}
	body := []byte(`[{"kinds":[1]}]`)
	if status, b := signedPost(t, member, base+"/query", "", "application/json", body, nip98.Options{Body: body, Nonce: true}); status != http.StatusForbidden || !strings.Contains(string(b), "banned") {
		t.Errorf("bridge query by the banned key = %d %s; want 403 banned", status, b)
	}
	ev := signed(t, agent, 1, "agent after", tag)
	evBody, _ := json.Marshal(ev)
	if status, b := signedPost(t, agent, base+"/events", "", "application/json", evBody, nip98.Options{Body: evBody, Tags: nostr.Tags{tag}}); status != http.StatusForbidden || !strings.Contains(string(b), "banned") {
		t.Errorf("bridge publish by the agent of the banned key = %d %s; want 403 banned", status, b)
	}
	// A member may not relay the banned key's events either.
	oc := login(t, url, owner)
	if msg := refused(t, oc, signed(t, member, 1, "relayed for the banned key")); !strings.Contains(msg, "banned") {
		t.Errorf("owner relaying the banned key's event: %q; want banned", msg)
	}
}

// TestChannelMemberUsesRelay: a key a channel admin adds with kind 9000
// may use the relay while a channel lists it; a ban still wins.
func TestChannelMemberUsesRelay(t *testing.T) {
	owner, newcomer := newKey(t), newKey(t)
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", t.TempDir(), "--owner", owner.pk)
	oc := login(t, url, owner)
	mustPublish(t, oc, signed(t, owner, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"name", "eng"}))
	if reason := publishAs(t, url, newcomer); !strings.Contains(reason, "not a relay member") {
		t.Fatalf("before add-member: %q", reason)
	}
	mustPublish(t, oc, signed(t, owner, workspace.KindAddUser, "", nostr.Tag{"h", chanA}, nostr.Tag{"p", newcomer.pk}))
	nc := login(t, url, newcomer)
	mustPublish(t, nc, signed(t, newcomer, 9, "hi all", nostr.Tag{"h", chanA}))

	mustPublish(t, oc, signed(t, owner, workspace.KindRemoveUser, "", nostr.Tag{"h", chanA}, nostr.Tag{"p", newcomer.pk}))
	if reason := publishAs(t, url, newcomer); !strings.Contains(reason, "not a relay member") {
		t.Errorf("after remove-member: %q; want not a relay member", reason)
	}
	mustPublish(t, oc, signed(t, owner, workspace.KindAddUser, "", nostr.Tag{"h", chanA}, nostr.Tag{"p", newcomer.pk}))
	mustManage(t, httpBase(url), owner, "banpubkey", newcomer.pk)
	if reason := publishAs(t, url, newcomer); !strings.Contains(reason, banReason) {
		t.Errorf("banned channel member: %q; want %q", reason, banReason)
	}
}

// TestAttackReadMembershipRecords: the relay's member and invite records
// are not served to anyone, and nobody may publish those kinds.
func TestAttackReadMembershipRecords(t *testing.T) {
	owner, member := newKey(t), newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	mustManage(t, r.HTTPURL(), owner, "allowpubkey", member.pk)
	mustManage(t, r.HTTPURL(), owner, "createinvite")
	for _, k := range []testKey{owner, member} {
		c := login(t, r.URL(), k)
		for _, f := range []nostr.Filter{{Authors: []string{r.PublicKey()}}, {Kinds: []int{workspace.KindMemberRecord, workspace.KindInviteRecord}}, {}} {
			evs, _ := query(t, c, f)
			for _, ev := range evs {
				if hiddenKind(ev.Kind) {
					t.Errorf("%s read a kind %d record with %v", k.pk[:8], ev.Kind, f)
				}
			}
		}
		if msg := refused(t, c, signed(t, k, workspace.KindMemberRecord, "{}", nostr.Tag{"d", k.pk})); !strings.Contains(msg, "kept by the relay") {
			t.Errorf("publishing kind %d: %q", workspace.KindMemberRecord, msg)
		}
	}
}

// createInvite calls createinvite and decodes its result.
func createInvite(t *testing.T, base string, k testKey, params ...any) (token, link string, expires int64) {
	t.Helper()
	var res struct {
		Token     string `json:"token"`
		URL       string `json:"url"`
		ExpiresAt int64  `json:"expires_at"`
	}
	if err := json.Unmarshal(mustManage(t, base, k, "createinvite", params...), &res); err != nil {
		t.Fatal(err)
	}
	return res.Token, res.URL, res.ExpiresAt
}

// redeemInvite posts token to /invite as k.
func redeemInvite(t *testing.T, base string, k testKey, token string, opts nip98.Options) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"token": token})
	if opts.Body == nil {
		opts.Body = body
	}
	return signedPost(t, k, base+invitePath, "", "application/json", body, opts)
}

// TestInviteRedeem: an invite makes the redeeming key a relay member and a
// member of its channels (39002 updated), once; a second use gets 410 and
// an unknown token 404. The token is stored only as its hash and survives
// a restart.
func TestInviteRedeem(t *testing.T) {
	owner, guest, late := newKey(t), newKey(t), newKey(t)
	exe := testexe.Link(t, "buzz-relay")
	dir := t.TempDir()
	cmd, url := runRelayArgs(t, exe, "--data", dir, "--owner", owner.pk)
	base := httpBase(url)
	oc := login(t, url, owner)
	mustPublish(t, oc, signed(t, owner, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"name", "eng"}, nostr.Tag{"private"}))

	token, link, expires := createInvite(t, base, owner, map[string]any{"channels": []string{chanA}})
	if len(token) < 43 || strings.Trim(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		t.Errorf("token %q: want 43+ URL-safe characters", token)
	}
	if link != base+"/#invite="+token {
		t.Errorf("url = %q; want %q", link, base+"/#invite="+token)
	}
	if week := time.Now().Add(7 * 24 * time.Hour).Unix(); expires < week-60 || expires > week+60 {
		t.Errorf("expires_at = %d; want about a week from now (%d)", expires, week)
	}
	oc.Close()
	stopRelay(t, cmd)
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(token)) {
				t.Errorf("%s holds the invite token itself", p)
			}
		}
		return nil
	})
	_, url = runRelayArgs(t, exe, "--data", dir, "--owner", owner.pk)
	base = httpBase(url)

	// Another first character, whatever the token's was (one in 64 starts
	// with x, which left it the same token).
	unknown := "x" + token[1:]
	if token[0] == 'x' {
		unknown = "y" + token[1:]
	}
	if status, b := redeemInvite(t, base, guest, unknown, nip98.Options{}); status != http.StatusNotFound {
		t.Errorf("unknown token: %d %s; want 404", status, b)
	}
	status, b := redeemInvite(t, base, guest, token, nip98.Options{})
	var got struct {
		PubKey   string   `json:"pubkey"`
		Channels []string `json:"channels"`
	}
	json.Unmarshal(b, &got)
	if status != http.StatusOK || got.PubKey != guest.pk || len(got.Channels) != 1 || got.Channels[0] != chanA {
		t.Fatalf("redeem = %d %s; want 200 with the guest and the channel", status, b)
	}
	gc := login(t, url, guest)
	mustPublish(t, gc, signed(t, guest, 9, "thanks for the invite", nostr.Tag{"h", chanA}))
	evs, _ := query(t, gc, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"d": []string{chanA}}})
	if len(evs) != 1 || evs[0].Tags.FindWithValue("p", guest.pk) == nil {
		t.Errorf("39002 after redeeming = %v; want the guest listed", evs)
	}
	if status, b := redeemInvite(t, base, late, token, nip98.Options{}); status != http.StatusGone || !strings.Contains(string(b), "used") {
		t.Errorf("second redemption = %d %s; want 410 already used", status, b)
	}
	if reason := publishAs(t, url, late); !strings.Contains(reason, "not a relay member") {
		t.Errorf("key of the refused redemption: %q; want not a relay member", reason)
	}
}

// TestAttackInviteForgedRedemption: a redemption must carry a NIP-98
// token for the relay's /invite URL whose payload hashes the body; a token
// lifted from another request does not spend the invite.
func TestAttackInviteForgedRedemption(t *testing.T) {
	owner, guest := newKey(t), newKey(t)
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", t.TempDir(), "--owner", owner.pk)
	base := httpBase(url)
	token, _, _ := createInvite(t, base, owner)
	body, _ := json.Marshal(map[string]string{"token": token})
	for name, opts := range map[string]nip98.Options{
		"no payload tag":    {Nonce: true},
		"another body":      {Body: []byte(`{"token":"other"}`)},
		"no token at all":   {},
		"token for /events": {Body: body},
	} {
		k, signURL := guest, ""
		if name == "no token at all" {
			k = testKey{}
		}
		if name == "token for /events" {
			signURL = base + "/events"
		}
		if name == "no payload tag" || name == "no token at all" {
			opts.Body = nil
		}
		status, b := signedPost(t, k, base+invitePath, signURL, "application/json", body, opts)
		if status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s; want 401", name, status, b)
		}
	}
	if status, b := redeemInvite(t, base, guest, token, nip98.Options{}); status != http.StatusOK {
		t.Errorf("proper redemption after the forged ones = %d %s; want 200", status, b)
	}
}

// TestInviteExpiry: an invite past expires_at gets 410; expires_in is
// bounded to 30 days; unknown channels are refused.
func TestInviteExpiry(t *testing.T) {
	owner, guest := newKey(t), newKey(t)
	now := time.Now()
	clock := func() time.Time { return now }
	r := startRelay(t, Config{Owner: owner.pk, Now: clock})
	token, _, expires := createInvite(t, r.HTTPURL(), owner, map[string]any{"expires_in": 3600})
	if expires != now.Unix()+3600 {
		t.Errorf("expires_at = %d; want %d", expires, now.Unix()+3600)
	}
	for _, p := range []map[string]any{{"expires_in": 0}, {"expires_in": 31 * 24 * 3600}, {"expires_in": 1.5}, {"channels": []string{"3f2504e0-4f89-41d3-9a0c-0305e82c3399"}}, {"channels": []string{"General"}}, {"colour": "red"}} {
		if _, rep := manage(t, r.HTTPURL(), owner, "createinvite", p); rep.Error == "" {
			t.Errorf("createinvite %v accepted", p)
		}
	}
	now = now.Add(2 * time.Hour)
	status, b := redeemInvite(t, r.HTTPURL(), guest, token, nip98.Options{Now: now})
	if status != http.StatusGone || !strings.Contains(string(b), "expired") {
		t.Errorf("expired invite = %d %s; want 410 expired", status, b)
	}
}

// TestMembershipPostgres: run-time members and invites are kept in the
// PostgreSQL store too.
func TestMembershipPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	db := startPostgres(t)
	owner, member, banned, guest := newKey(t), newKey(t), newKey(t), newKey(t)
	dir := t.TempDir()
	r := startRelay(t, Config{DataDir: dir, DB: db, Owner: owner.pk})
	mustManage(t, r.HTTPURL(), owner, "allowpubkey", member.pk)
	mustManage(t, r.HTTPURL(), owner, "allowpubkey", banned.pk)
	mustManage(t, r.HTTPURL(), owner, "banpubkey", banned.pk)
	token, _, _ := createInvite(t, r.HTTPURL(), owner)
	r.Close()

	r2 := startRelay(t, Config{DataDir: dir, DB: db, Owner: owner.pk})
	if !r2.isMember(member.pk) || r2.isMember(banned.pk) || !r2.mem.isBanned(banned.pk) {
		t.Errorf("after restart on PostgreSQL: member %v, banned key member %v", r2.isMember(member.pk), r2.isMember(banned.pk))
	}
	if status, b := redeemInvite(t, r2.HTTPURL(), guest, token, nip98.Options{}); status != http.StatusOK {
		t.Errorf("invite after restart on PostgreSQL = %d %s", status, b)
	}
}

// TestAttackBannedGitOnOpenRelay: on an --open relay, where git needs no
// membership, a banned key is still refused git access.
func TestAttackBannedGitOnOpenRelay(t *testing.T) {
	owner, banned := newKey(t), newKey(t)
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), "--data", t.TempDir(), "--open", "--owner", owner.pk)
	base := httpBase(url)
	gitGet := func(k testKey) (int, string) {
		t.Helper()
		repo := base + "/git/" + k.pk + "/tools.git"
		return nip98Get(t, k, repo, repo+"/info/refs?service=git-upload-pack", nip98.Options{})
	}
	if status, body := gitGet(banned); status == http.StatusForbidden {
		t.Fatalf("before the ban: %d %s", status, body)
	}
	mustManage(t, base, owner, "banpubkey", banned.pk)
	if status, body := gitGet(banned); status != http.StatusForbidden || !strings.Contains(body, "banned") {
		t.Errorf("banned key's git request = %d %q; want 403 banned", status, body)
	}
}

// TestMemberRecordsPastFirstPage: more run-time members than one store
// query returns are all read back at start.
func TestMemberRecordsPastFirstPage(t *testing.T) {
	owner := newKey(t)
	dir := t.TempDir()
	r := startRelay(t, Config{DataDir: dir, Owner: owner.pk})
	keys := make([]string, maxQueryLimit+5)
	for i := range keys {
		keys[i] = newKey(t).pk
		if err := r.changeMember(t.Context(), keys[i], func(m *memberRecord) { m.Allowed = true }); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	r2 := startRelay(t, Config{DataDir: dir, Owner: owner.pk})
	missing := 0
	for _, pk := range keys {
		if !r2.isMember(pk) {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d members lost across a restart", missing, len(keys))
	}
}
