package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nip98"
	"buzzbox/internal/workspace/nipoa"
	"buzzbox/relay"
)

func startBuzzRelay(t *testing.T, owner testKey) *relay.Relay {
	t.Helper()
	r, err := relay.Start(relay.Config{DataDir: t.TempDir(), Owner: owner.pk}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func mustBuzz(t *testing.T, base string, k testKey, args ...string) string {
	t.Helper()
	res := runBuzz(t, base, k, "", args...)
	if res.code != 0 {
		t.Fatalf("buzz %s: exit %d\n%s", strings.Join(args, " "), res.code, res.stderr)
	}
	return res.stdout
}

// TestMembersCommands: members add lets a key in, ban shuts it out, unban
// and remove undo them, list shows both lists; only the owner may.
func TestMembersCommands(t *testing.T) {
	owner, bot := newKey(t), newKey(t)
	r := startBuzzRelay(t, owner)
	base := r.HTTPURL()
	fails(t, runBuzz(t, base, bot, "", "channels", "list"), 3, catAuth)

	mustBuzz(t, base, owner, "members", "add", "--pubkey", bot.pk, "--reason", "release bot")
	mustBuzz(t, base, bot, "channels", "list")
	var list []struct{ Pubkey, Reason string }
	json.Unmarshal([]byte(mustBuzz(t, base, owner, "members", "list")), &list)
	found := false
	for _, e := range list {
		found = found || e.Pubkey == bot.pk && e.Reason == "release bot"
	}
	if !found {
		t.Errorf("members list = %+v; want the bot with its reason", list)
	}
	res := runBuzz(t, base, bot, "", "members", "ban", "--pubkey", owner.pk)
	fails(t, res, 3, catAuth)
	if !strings.Contains(res.stderr, "owner or an admin") {
		t.Errorf("members ban by a member: stderr %s", res.stderr)
	}

	mustBuzz(t, base, owner, "members", "ban", "--pubkey", bot.pk, "--reason", "spam")
	res = runBuzz(t, base, bot, "", "channels", "list")
	fails(t, res, 3, catAuth)
	if !strings.Contains(res.stderr, "banned") {
		t.Errorf("banned bot: stderr %s; want banned", res.stderr)
	}
	if out := mustBuzz(t, base, owner, "members", "list", "--banned"); !strings.Contains(out, bot.pk) || !strings.Contains(out, "spam") {
		t.Errorf("members list --banned = %s", out)
	}
	mustBuzz(t, base, owner, "members", "unban", "--pubkey", bot.pk)
	mustBuzz(t, base, bot, "channels", "list")
	mustBuzz(t, base, owner, "members", "remove", "--pubkey", bot.pk)
	fails(t, runBuzz(t, base, bot, "", "channels", "list"), 3, catAuth)
	fails(t, runBuzz(t, base, owner, "", "members", "add", "--pubkey", "nope"), 1, catUser)
}

// TestMembersInvite: members invite prints a link; redeeming its token
// the way the web client does puts a new key in the channel.
func TestMembersInvite(t *testing.T) {
	owner, guest := newKey(t), newKey(t)
	r := startBuzzRelay(t, owner)
	base := r.HTTPURL()
	var created struct {
		ChannelID string `json:"channel_id"`
	}
	json.Unmarshal([]byte(mustBuzz(t, base, owner, "channels", "create", "--name", "eng", "--type", "stream", "--visibility", "private")), &created)
	var inv struct {
		URL       string `json:"url"`
		Token     string `json:"token"`
		ExpiresAt int64  `json:"expires_at"`
	}
	json.Unmarshal([]byte(mustBuzz(t, base, owner, "members", "invite", "--channel", created.ChannelID, "--expires", "24h")), &inv)
	if !strings.HasSuffix(inv.URL, "/#invite="+inv.Token) || len(inv.Token) < 43 {
		t.Fatalf("members invite = %+v", inv)
	}
	if day := time.Now().Add(24 * time.Hour).Unix(); inv.ExpiresAt < day-60 || inv.ExpiresAt > day+60 {
		t.Errorf("expires_at = %d; want a day from now", inv.ExpiresAt)
	}
	fails(t, runBuzz(t, base, owner, "", "members", "invite", "--expires", "1000h"), 1, catUser)
	if link := mustBuzz(t, base, owner, "members", "invite", "--format", "compact"); !strings.HasPrefix(link, base+"/#invite=") || strings.Count(link, "\n") != 1 {
		t.Errorf("members invite --format compact = %q; want the link on one line", link)
	}

	body, _ := json.Marshal(map[string]string{"token": inv.Token})
	sec, _ := nostrkey.ParseSecret(guest.sk)
	hdr, err := nip98.Header(sec, base+"/invite", http.MethodPost, nip98.Options{Body: body})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/invite", bytes.NewReader(body))
	req.Header.Set("Authorization", hdr)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), created.ChannelID) {
		t.Fatalf("redeem = %d %s", resp.StatusCode, b)
	}
	mustBuzz(t, base, guest, "messages", "send", "--channel", created.ChannelID, "--content", "glad to be here")
}

// TestMembersInvites: members invites lists the pending invites (id,
// maker, channels, expiry, never the link) and --revoke ends one: its
// link is refused after, and the list no longer shows it.
func TestMembersInvites(t *testing.T) {
	owner, guest := newKey(t), newKey(t)
	r := startBuzzRelay(t, owner)
	base := r.HTTPURL()
	var inv struct {
		URL   string `json:"url"`
		Token string `json:"token"`
		ID    string `json:"id"`
	}
	json.Unmarshal([]byte(mustBuzz(t, base, owner, "members", "invite", "--expires", "1h")), &inv)
	type row struct {
		ID        string   `json:"id"`
		CreatedBy string   `json:"created_by"`
		Channels  []string `json:"channels"`
		ExpiresAt int64    `json:"expires_at"`
	}
	out := mustBuzz(t, base, owner, "members", "invites")
	if strings.Contains(out, inv.Token) {
		t.Fatalf("members invites shows the token: %s", out)
	}
	var rows []row
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0].ID != inv.ID || rows[0].CreatedBy != owner.pk || rows[0].Channels == nil {
		t.Fatalf("members invites = %s (%v); want the one invite, id %s, made by the owner", out, err, inv.ID)
	}
	if hour := time.Now().Add(time.Hour).Unix(); rows[0].ExpiresAt < hour-60 || rows[0].ExpiresAt > hour+60 {
		t.Errorf("expires_at = %d; want an hour from now", rows[0].ExpiresAt)
	}
	fails(t, runBuzz(t, base, owner, "", "members", "invites", "--revoke", "not-an-id"), 1, catUser)
	fails(t, runBuzz(t, base, guest, "", "members", "invites"), 3, catAuth)
	var revoked struct {
		ID      string `json:"id"`
		Revoked bool   `json:"revoked"`
	}
	json.Unmarshal([]byte(mustBuzz(t, base, owner, "members", "invites", "--revoke", inv.ID)), &revoked)
	if revoked.ID != inv.ID || !revoked.Revoked {
		t.Errorf("members invites --revoke = %+v", revoked)
	}
	if out := mustBuzz(t, base, owner, "members", "invites"); strings.TrimSpace(out) != "[]" {
		t.Errorf("members invites after the revoke = %s; want []", out)
	}
	body, _ := json.Marshal(map[string]string{"token": inv.Token})
	sec, _ := nostrkey.ParseSecret(guest.sk)
	hdr, err := nip98.Header(sec, base+"/invite", http.MethodPost, nip98.Options{Body: body})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/invite", bytes.NewReader(body))
	req.Header.Set("Authorization", hdr)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Errorf("redeeming the revoked link = %d %s; want 410", resp.StatusCode, b)
	}
	if res := runBuzz(t, base, owner, "", "members", "invites", "--help"); res.code != 0 || !strings.Contains(res.stdout+res.stderr, "--revoke") {
		t.Errorf("members invites --help: exit %d %s%s", res.code, res.stdout, res.stderr)
	}
}

// TestAgentsAttest: agents attest prints a tag that verifies for the
// agent and lets it into a relay whose member is the owner.
func TestAgentsAttest(t *testing.T) {
	owner, agent := newKey(t), newKey(t)
	r := startBuzzRelay(t, owner)
	base := r.HTTPURL()
	out := mustBuzz(t, base, owner, "agents", "attest", "--agent", agent.pk, "--kinds", "9", "--until", "720h")
	tag, err := nipoa.Parse(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("agents attest printed %q: %v", out, err)
	}
	pub, _ := nostrkey.ParsePublic(agent.pk)
	if err := tag.Verify(pub); err != nil || tag.Owner.Hex() != owner.pk {
		t.Fatalf("attestation does not verify for the agent: %v", err)
	}
	cond, until, _ := strings.Cut(tag.Conditions, "&created_at<")
	n, _ := strconv.ParseInt(until, 10, 64)
	if cond != "kind=9" || n < time.Now().Add(719*time.Hour).Unix() {
		t.Errorf("conditions = %q; want kind=9 and created_at about 30 days ahead", tag.Conditions)
	}
	fails(t, runBuzz(t, base, agent, "", "channels", "list"), 3, catAuth)
	res := runBuzzEnv(t, []string{"BUZZ_RELAY_URL=" + base, "BUZZ_PRIVATE_KEY=" + agent.sk, "BUZZ_AUTH_TAG=" + strings.TrimSpace(out)}, "", "channels", "list")
	if res.code != 0 {
		t.Fatalf("channels list with the minted BUZZ_AUTH_TAG: exit %d %s", res.code, res.stderr)
	}

	fails(t, runBuzz(t, base, owner, "", "agents", "attest", "--agent", agent.pk, "--kinds", "1,7"), 1, catUser)
	fails(t, runBuzz(t, base, owner, "", "agents", "attest", "--agent", owner.pk), 1, catUser)
	fails(t, runBuzz(t, base, owner, "", "agents", "attest", "--agent", agent.pk, "--until", "yesterday"), 1, catUser)
}
