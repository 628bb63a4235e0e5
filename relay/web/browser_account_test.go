package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nip98"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// mintLink posts body to the built relay's /login/new, NIP-98 signed by
// signer (no header when signer is ""), and returns the status and answer.
func mintLink(t *testing.T, base, signer, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/login/new", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if signer != "" {
		sec, _ := nostrkey.ParseSecret(signer)
		hdr, err := nip98.Header(sec, base+"/login/new", http.MethodPost, nip98.Options{Body: []byte(body), Nonce: true})
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", hdr)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out map[string]any
	json.Unmarshal(b, &out)
	return res.StatusCode, out
}

// TestAttackLoginLinkOnlyForOwnKey attacks the built relay's /login/new:
// without NIP-98, signed by another key than the one in the body, or by
// a key that is no member of a closed relay, no link is made; the
// holder of a key gets one that hands that key over once.
func TestAttackLoginLinkOnlyForOwnKey(t *testing.T) {
	owner := nostr.GeneratePrivateKey()
	ownerPK, _ := nostr.GetPublicKey(owner)
	base := startBinary(t, "--owner", ownerPK)
	stranger := nostr.GeneratePrivateKey()
	nsecOf := func(sk string) string { s, _ := nip19.EncodePrivateKey(sk); return s }
	body := func(sk string) string { return `{"nsec":"` + nsecOf(sk) + `"}` }
	cases := []struct {
		what, signer, body string
		want               int
	}{
		{"no NIP-98 token", "", body(owner), 401},
		{"another key's link", stranger, body(owner), 403},
		{"hex of another key", stranger, `{"nsec":"` + owner + `"}`, 403},
		{"a stranger's own key on a closed relay", stranger, body(stranger), 403},
		{"no key", owner, `{}`, 400},
		{"not a key", owner, `{"nsec":"nsec1qqqq"}`, 403},
	}
	for _, c := range cases {
		if status, out := mintLink(t, base, c.signer, c.body); status != c.want || out["token"] != nil {
			t.Errorf("%s: %d %v; want %d and no token", c.what, status, out, c.want)
		}
	}
	status, out := mintLink(t, base, owner, body(owner))
	tok, _ := out["token"].(string)
	if status != 200 || tok == "" {
		t.Fatalf("the owner's own link: %d %v", status, out)
	}
	redeem := func() (int, string) {
		res, err := http.Post(base+"/login", "application/json", strings.NewReader(`{"token":"`+tok+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var got struct{ Nsec string }
		json.NewDecoder(res.Body).Decode(&got)
		return res.StatusCode, got.Nsec
	}
	if s, n := redeem(); s != 200 || n != nsecOf(owner) {
		t.Errorf("redeeming the link: %d %q; want the owner's nsec", s, n)
	}
	if s, n := redeem(); s != 410 || n != "" {
		t.Errorf("redeeming it again: %d %q; want 410 and nothing", s, n)
	}
}

// TestBrowserAccountKey: the owner of a `buzzbox up` workspace, signed
// in by its link, backs the key up from the account menu (its nsec, the
// key of owner.key, after a confirm) and makes a one-time link that signs
// a second browser in as the same key; the sign-in box takes the hex of
// owner.key too.
func TestBrowserAccountKey(t *testing.T) {
	w := startTeam(t)
	ctx, consoleErrors := browser(t)
	base := w.base()
	shots := t.TempDir()
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() { // accepts every confirm(); ends when ctx ends
		for _, err := range dialogs {
			if err != nil {
				return
			}
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	signInAsOwner(t, ctx, w)
	sk := w.ownerKey(t)
	nsec, _ := nip19.EncodePrivateKey(sk)
	waitJS(t, ctx, "connected", `document.getElementById('status').dataset.state === 'connected' || document.getElementById('status').dataset.state === 'authenticated'`)
	do(t, ctx, "open the account menu", chromedp.Click(chromedp.ID("me")))
	do(t, ctx, "back up the key", chromedp.Click(button("Back up my key")))
	waitJS(t, ctx, "the nsec", `document.getElementById('backup-nsec').value.startsWith('nsec1')`)
	if got, _ := chromedp.Run(ctx, chromedp.Value(chromedp.ID("backup-nsec"))); got != nsec {
		t.Errorf("backed-up key %q; want %q", got, nsec)
	}
	do(t, ctx, "make a link for another device", chromedp.Click(button("Sign in on another device")))
	waitJS(t, ctx, "the link", `document.getElementById('device-link-out').value.includes('/#login=')`)
	shot(t, ctx, shots, "account-desktop")
	link, _ := chromedp.Run(ctx, chromedp.Value(chromedp.ID("device-link-out")))
	if strings.Contains(link, nsec) || strings.Contains(link, sk) {
		t.Fatalf("the link %q carries the key", link)
	}

	other, _ := browser(t)
	openURL(t, other, "open the link", link)
	waitJS(t, other, "signed in by the link", `Object.values(localStorage).includes(`+jsq(sk)+`)`)
	// The hex form of the key (as in owner.key) signs in too.
	do(t, other, "forget the key", chromedp.Evaluate[chromedp.Void](`localStorage.clear()`))
	openSignIn(t, other, base)
	do(t, other, "sign in with hex", chromedp.SendKeys(chromedp.ID("import-nsec"), sk), chromedp.Click(button("Sign in with this key")))
	waitJS(t, other, "signed in by hex", `!document.getElementById('signin').open && Object.values(localStorage).includes(`+jsq(sk)+`)`)
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// jsq quotes s as a JavaScript string.
func jsq(s string) string { b, _ := json.Marshal(s); return string(bytes.TrimSpace(b)) }
