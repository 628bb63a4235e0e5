package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
)

// The browser tests of the web client's numbered items run the built
// `buzzbox up` and bring people in as a team would: the owner by the
// sign-in link up prints, everyone else by an invite link the owner
// makes. Those who write from another client (go-nostr here, as any
// Nostr client) join by an invite link too, redeemed with their own key
// as the page redeems it.

// startTeam runs the built `buzzbox up` for a test of the web client in
// which the agent is not asked anything (its model answers "done").
func startTeam(t testing.TB) upWorkspace {
	t.Helper()
	return startUp(t, llmtest.New(t))
}

// base is the http:// URL the workspace's page is served at.
func (w upWorkspace) base() string { return "http://" + w.addr }

// ownerKey is the owner's secret (hex) from owner.key in up's state dir,
// which the owner reads to use another client or to sign in elsewhere.
func (w upWorkspace) ownerKey(t testing.TB) string {
	t.Helper()
	keys, _ := filepath.Glob(filepath.Join(w.home, "state", "buzzbox", "*", "owner.key"))
	if len(keys) != 1 {
		t.Fatalf("owner.key in %s: found %v", w.home, keys)
	}
	b, err := os.ReadFile(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// invite makes an invite link to the general channel as the owner
// (NIP-86 createinvite, what the members dialog's Invite link tab sends).
func (w upWorkspace) invite(t testing.TB) string {
	t.Helper()
	var res struct {
		Result struct{ URL string }
		Error  string
	}
	raw := manageCall(t, w.base(), w.ownerKey(t), "createinvite", map[string]any{"channels": []string{w.channel}, "expires_in": 3600})
	if err := json.Unmarshal(raw, &res); err != nil || res.Result.URL == "" {
		t.Fatalf("createinvite: %s (%v)", raw, err)
	}
	return res.Result.URL
}

// join brings a new person called name into w by an invite link the
// owner made, redeemed with a key of their own (POST /invite under its
// NIP-98 token, as the page does), and returns them as a client of the
// relay, signed in and with their profile published.
func (w upWorkspace) join(t testing.TB, name string) *peer {
	t.Helper()
	link := w.invite(t)
	_, token, _ := strings.Cut(link, "#invite=")
	sk := nostr.GeneratePrivateKey()
	body, _ := json.Marshal(map[string]string{"token": token})
	sec, _ := nostrkey.ParseSecret(sk)
	url := w.base() + "/invite"
	hdr, err := nip98.Header(sec, url, http.MethodPost, nip98.Options{Body: body, Nonce: true})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", hdr)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s redeems the invite: %d %s", name, res.StatusCode, answer)
	}
	p := newPeer(t, w.base())
	p.sk = sk
	p.pk, _ = nostr.GetPublicKey(sk)
	p.auth()
	p.publish(0, fmt.Sprintf(`{"name":%q}`, name))
	return p
}

// ownerPeer is the owner on another client, with the key from owner.key.
func (w upWorkspace) ownerPeer(t testing.TB) *peer {
	t.Helper()
	p := newPeer(t, w.base())
	p.sk = w.ownerKey(t)
	p.pk, _ = nostr.GetPublicKey(p.sk)
	p.auth()
	return p
}

// joinInBrowser has a new person open an invite link in ctx and make a
// key there, named name; it returns the key's secret (hex) once the page
// shows a channel.
func joinInBrowser(t testing.TB, ctx context.Context, link, name string) string {
	t.Helper()
	openURL(t, ctx, "open the invite", link)
	waitJS(t, ctx, "the invited sign-in", `document.getElementById('signin').open`)
	sk := createKey(t, ctx, name)
	waitJS(t, ctx, "the channel", `document.getElementById('channel-name').textContent !== ''`)
	return sk
}

// signInAsOwner opens w's sign-in link in ctx and waits until the page
// is signed in to the relay as the owner.
func signInAsOwner(t testing.TB, ctx context.Context, w upWorkspace) {
	t.Helper()
	openURL(t, ctx, "open the sign-in link", w.link)
	waitJS(t, ctx, "signed in as the owner", `document.getElementById('status').dataset.state === 'authenticated'`)
}

// spread is a team of several people who write a long history between
// them, each within the relay's per-person rate.
type spread []*peer

// publishAt publishes the i-th event of the history from the team's
// writers in turn, dated at.
func (s spread) publishAt(i int, at nostr.Timestamp, kind int, content string, tags ...nostr.Tag) nostr.Event {
	return s[i%len(s)].publishAt(at, kind, content, tags...)
}

// team has n people join w (named name 1, name 2, …).
func (w upWorkspace) team(t testing.TB, name string, n int) spread {
	t.Helper()
	s := make(spread, n)
	for i := range s {
		s[i] = w.join(t, fmt.Sprint(name, " ", i+1))
	}
	return s
}
