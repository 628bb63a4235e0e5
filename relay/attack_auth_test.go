package relay

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// Attacks on the trust boundary: owner attestations (NIP-OA) whose
// conditions were ignored, and NIP-98 / NIP-42 tokens bound to whatever
// Host the client sent. Most run against the built buzz-relay binary.

// execRelay starts the real buzz-relay binary on 127.0.0.1:0 with args
// and a fresh data dir, and returns its websocket URL.
func execRelay(t *testing.T, args ...string) string {
	t.Helper()
	_, url := runRelayArgs(t, testexe.Link(t, "buzz-relay"), append([]string{"--data", t.TempDir()}, args...)...)
	return url
}

// loginWith authenticates as k with extra tags on the AUTH event (a NIP-OA
// auth tag) and returns the connection.
func loginWith(t *testing.T, url string, k testKey, tags ...nostr.Tag) *nostr.Relay {
	t.Helper()
	c := connect(t, url)
	awaitChallenge(t, c)
	if err := c.Auth(testCtx(t), func(ev *nostr.Event) error {
		ev.Tags = append(ev.Tags, tags...)
		return ev.Sign(k.sk)
	}); err != nil {
		t.Fatalf("AUTH as %s: %v", k.pk[:8], err)
	}
	return c
}

// bridgeCall posts body to url with a NIP-98 token signed by k for
// signedURL (url when empty) with opt, extra request headers and the
// Host header host (the URL's when empty).
func bridgeCall(t *testing.T, k testKey, url, signedURL string, opt nip98.Options, host string, hdr map[string]string, body []byte) (int, string) {
	t.Helper()
	if signedURL == "" {
		signedURL = url
	}
	sec, err := nostrkey.ParseSecret(k.sk)
	if err != nil {
		t.Fatal(err)
	}
	opt.Nonce = true
	auth, err := nip98.Header(sec, signedURL, "POST", opt)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(testCtx(t), "POST", url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

func httpOf(wsURL string) string { return "http" + strings.TrimPrefix(wsURL, "ws") }

func unixIn(d time.Duration) string { return strconv.FormatInt(time.Now().Add(d).Unix(), 10) }

// TestAttackExpiredAttestationGrantsAccess: an agent whose owner
// attestation expired (created_at< in the past) logged in with it and read
// and wrote as its owner's agent, on the websocket and on the bridge.
func TestAttackExpiredAttestationGrantsAccess(t *testing.T) {
	owner, agent := newKey(t), newKey(t)
	url := execRelay(t, "--owner", owner.pk)
	expired := attest(t, owner, agent, "created_at<"+unixIn(-time.Hour))
	valid := attest(t, owner, agent, "created_at<"+unixIn(time.Hour))

	c := loginWith(t, url, agent, expired)
	if reason := refused(t, c, signed(t, agent, 1, "expired grant")); !strings.Contains(reason, "restricted") {
		t.Errorf("publish under an expired attestation = %q; want restricted", reason)
	}
	if _, reason := query(t, c, nostr.Filter{Kinds: []int{1}}); !strings.Contains(reason, "restricted") || !strings.Contains(reason, "attestation") {
		t.Errorf("REQ under an expired attestation = CLOSED %q; want restricted, naming the attestation", reason)
	}
	mustPublish(t, loginWith(t, url, agent, valid), signed(t, agent, 1, "valid grant"))

	q := jsonOf(t, []nostr.Filter{{Kinds: []int{1}}})
	status, body := bridgeCall(t, agent, httpOf(url)+"/query", "", nip98.Options{Body: q}, "",
		map[string]string{"x-auth-tag": string(jsonOf(t, expired))}, q)
	if status != http.StatusForbidden || !strings.Contains(body, "attestation") {
		t.Errorf("/query with an expired x-auth-tag = %d %s; want 403 naming the attestation", status, body)
	}
	status, body = bridgeCall(t, agent, httpOf(url)+"/query", "", nip98.Options{Body: q, Tags: nostr.Tags{expired}}, "", nil, q)
	if status != http.StatusForbidden {
		t.Errorf("/query with an expired auth tag in the token = %d %s; want 403", status, body)
	}
	status, body = bridgeCall(t, agent, httpOf(url)+"/query", "", nip98.Options{Body: q}, "",
		map[string]string{"x-auth-tag": string(jsonOf(t, valid))}, q)
	if status != http.StatusOK {
		t.Errorf("/query with a valid x-auth-tag = %d %s; want 200", status, body)
	}
}

// TestAttackKindLimitedAttestationWritesAnyKind: an attestation limited to
// kind 7 let the agent write every kind. Reads stay allowed.
func TestAttackKindLimitedAttestationWritesAnyKind(t *testing.T) {
	owner, agent := newKey(t), newKey(t)
	url := execRelay(t, "--owner", owner.pk)
	reactions := attest(t, owner, agent, "kind=7")

	c := loginWith(t, url, agent, reactions)
	if reason := refused(t, c, signed(t, agent, 1, "not a reaction")); !strings.Contains(reason, "kind 7") {
		t.Errorf("kind 1 under a kind=7 attestation = %q; want refused naming kind 7", reason)
	}
	mustPublish(t, c, signed(t, agent, 7, "+"))
	if _, reason := query(t, c, nostr.Filter{Kinds: []int{7}}); reason != "" {
		t.Errorf("REQ under a kind=7 attestation = CLOSED %q; want EOSE (reads are allowed)", reason)
	}
	mine := signed(t, agent, 7, "+")
	mustPublish(t, c, mine)
	del := signed(t, agent, 5, "", nostr.Tag{"e", mine.ID})
	if reason := refused(t, c, del); !strings.Contains(reason, "kind 7") {
		t.Errorf("kind 5 deletion under a kind=7 attestation = %q; want refused naming kind 7", reason)
	}

	tag := map[string]string{"x-auth-tag": string(jsonOf(t, reactions))}
	note := jsonOf(t, signed(t, agent, 1, "via bridge"))
	status, body := bridgeCall(t, agent, httpOf(url)+"/events", "", nip98.Options{Body: note}, "", tag, note)
	if status != http.StatusForbidden || !strings.Contains(body, "kind 7") {
		t.Errorf("/events kind 1 under a kind=7 x-auth-tag = %d %s; want 403 naming kind 7", status, body)
	}
	react := jsonOf(t, signed(t, agent, 7, "+"))
	if status, body := bridgeCall(t, agent, httpOf(url)+"/events", "", nip98.Options{Body: react}, "", tag, react); status != http.StatusOK {
		t.Errorf("/events kind 7 under a kind=7 x-auth-tag = %d %s; want 200", status, body)
	}
	q := jsonOf(t, []nostr.Filter{{Kinds: []int{7}}})
	if status, body := bridgeCall(t, agent, httpOf(url)+"/query", "", nip98.Options{Body: q}, "", tag, q); status != http.StatusOK {
		t.Errorf("/query under a kind=7 x-auth-tag = %d %s; want 200", status, body)
	}
}

// gitProbe asks for a repository's refs with a NIP-98 token by k carrying
// tags and returns the status and body.
func gitProbe(t *testing.T, k testKey, repoURL string, tags ...nostr.Tag) (int, string) {
	t.Helper()
	return nip98Get(t, k, repoURL, repoURL+"/info/refs?service=git-upload-pack", nip98.Options{Tags: tags})
}

// TestGitAttestationConditions: the git route applies the grant rules:
// expired, not yet valid and kind-limited attestations give no access. The
// owner's repository does not exist, so an accepted agent gets 404 and a
// refused one 403.
func TestGitAttestationConditions(t *testing.T) {
	owner, agent := newKey(t), newKey(t)
	url := execRelay(t, "--owner", owner.pk)
	repo := httpOf(url) + "/git/" + owner.pk + "/r.git"
	for _, tc := range []struct {
		conditions string
		status     int
	}{
		{"", http.StatusNotFound},
		{"created_at<" + unixIn(time.Hour), http.StatusNotFound},
		{"created_at<" + unixIn(-time.Hour), http.StatusForbidden},
		{"created_at>" + unixIn(time.Hour), http.StatusForbidden},
		{"kind=1", http.StatusForbidden},
	} {
		status, body := gitProbe(t, agent, repo, attest(t, owner, agent, tc.conditions))
		if status != tc.status {
			t.Errorf("git under attestation %q = %d %s; want %d", tc.conditions, status, strings.TrimSpace(body), tc.status)
		}
	}
}

// wsClient is a raw websocket client that sees every frame in order.
type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

func dialWS(t *testing.T, url string, opts *websocket.DialOptions) *wsClient {
	t.Helper()
	c, _, err := websocket.Dial(testCtx(t), url, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(maxMessageBytes)
	t.Cleanup(func() { c.CloseNow() })
	return &wsClient{t, c}
}

func (w *wsClient) send(v ...any) {
	w.t.Helper()
	if err := w.c.Write(testCtx(w.t), websocket.MessageText, jsonOf(w.t, v)); err != nil {
		w.t.Fatal(err)
	}
}

// next reads one message as a label and its raw fields.
func (w *wsClient) next() (string, []json.RawMessage) {
	w.t.Helper()
	_, b, err := w.c.Read(testCtx(w.t))
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	var msg []json.RawMessage
	var label string
	if json.Unmarshal(b, &msg) != nil || len(msg) == 0 || json.Unmarshal(msg[0], &label) != nil {
		w.t.Fatalf("relay sent %s", b)
	}
	return label, msg[1:]
}

// auth reads the challenge, answers it as k naming relayURL with extra
// tags and returns the OK's verdict and reason.
func (w *wsClient) auth(k testKey, relayURL string, tags ...nostr.Tag) (bool, string) {
	w.t.Helper()
	label, f := w.next()
	var challenge string
	if label != "AUTH" || json.Unmarshal(f[0], &challenge) != nil {
		w.t.Fatalf("first message is %s, not an AUTH challenge", label)
	}
	tags = append(nostr.Tags{{"relay", relayURL}, {"challenge", challenge}}, tags...)
	ev := nostr.Event{Kind: workspace.KindAuth, CreatedAt: nostr.Now(), Tags: tags}
	if err := ev.Sign(k.sk); err != nil {
		w.t.Fatal(err)
	}
	w.send("AUTH", ev)
	return w.ok(ev.ID)
}

// ok reads up to the OK for id and returns its verdict and reason.
func (w *wsClient) ok(id string) (bool, string) {
	w.t.Helper()
	for {
		label, f := w.next()
		var got, reason string
		var accepted bool
		if label != "OK" || len(f) < 3 || json.Unmarshal(f[0], &got) != nil || got != id {
			continue
		}
		json.Unmarshal(f[1], &accepted)
		json.Unmarshal(f[2], &reason)
		return accepted, reason
	}
}

// TestAttackAttestationExpiresWhileConnected: the attestation was judged
// once, at AUTH; a websocket kept its owner's rights after the attestation
// expired. The relay's clock is moved past the expiry; the live
// subscription must not deliver the owner's next event, a new REQ is
// closed and a write refused. Frames are read in order on one socket, so
// an event delivered to the old subscription would arrive before the new
// REQ's answer.
func TestAttackAttestationExpiresWhileConnected(t *testing.T) {
	owner, agent := newKey(t), newKey(t)
	var skew atomic.Int64 // nanoseconds the relay's clock runs ahead
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	r := startRelay(t, Config{Owner: owner.pk, Now: now})
	expires := time.Now().Add(time.Hour)
	grant := attest(t, owner, agent, "created_at<"+strconv.FormatInt(expires.Unix(), 10))

	ownerConn := login(t, r.URL(), owner)
	w := dialWS(t, r.URL(), nil)
	if ok, reason := w.auth(agent, r.URL(), grant); !ok {
		t.Fatalf("AUTH with a valid attestation refused: %s", reason)
	}
	w.send("REQ", "live", nostr.Filter{Kinds: []int{1}})
	if label, _ := w.next(); label != "EOSE" {
		t.Fatalf("live REQ answered %s; want EOSE", label)
	}
	before := signed(t, agent, 1, "before expiry")
	w.send("EVENT", before)
	for got := map[string]bool{}; !got["OK"] || !got["EVENT"]; {
		label, f := w.next()
		got[label] = true
		if label == "OK" && !strings.Contains(string(f[1]), "true") {
			t.Fatalf("write before expiry refused: %s", f[2])
		}
	}

	skew.Store(int64(2 * time.Hour))
	late := signed(t, owner, 1, "after expiry")
	mustPublish(t, ownerConn, late)
	w.send("REQ", "probe", nostr.Filter{Kinds: []int{1}})
	for answered := false; !answered; {
		label, f := w.next()
		var sub string
		json.Unmarshal(f[0], &sub)
		switch {
		case label == "EVENT" && sub == "live":
			t.Errorf("live subscription delivered an event after the attestation expired")
		case sub == "probe":
			answered = true
			if label != "CLOSED" {
				t.Errorf("REQ after expiry answered %s; want CLOSED", label)
			}
		}
	}
	after := signed(t, agent, 1, "after expiry")
	w.send("EVENT", after)
	if ok, reason := w.ok(after.ID); ok || !strings.Contains(reason, "attestation") {
		t.Errorf("write after expiry = %v %q; want refused naming the attestation", ok, reason)
	}
}

// TestAttackNIP98TokenForOtherHost: the bridge and git routes checked the
// token's u tag against the request's own Host header, so a token minted
// for another server (http://other.example/query) was accepted when the
// request said Host: other.example.
func TestAttackNIP98TokenForOtherHost(t *testing.T) {
	owner := newKey(t)
	url := execRelay(t, "--owner", owner.pk)
	base := httpOf(url)
	q := jsonOf(t, []nostr.Filter{{Kinds: []int{1}}})
	body := func(status int, b string) string { return strconv.Itoa(status) + " " + strings.TrimSpace(b) }

	status, b := bridgeCall(t, owner, base+"/query", "http://other.example/query", nip98.Options{Body: q}, "other.example", nil, q)
	if status != http.StatusUnauthorized || !strings.Contains(b, "u tag") {
		t.Errorf("/query with a token for other.example and Host: other.example = %s; want 401 about the u tag", body(status, b))
	}
	status, b = bridgeCall(t, owner, base+"/query", "http://other.example/query", nip98.Options{Body: q}, "",
		map[string]string{"X-Forwarded-Host": "other.example", "X-Forwarded-Proto": "http"}, q)
	if status != http.StatusUnauthorized {
		t.Errorf("/query with a token for other.example and X-Forwarded-Host: other.example = %s; want 401", body(status, b))
	}
	local := strings.Replace(base, "127.0.0.1", "localhost", 1)
	if status, b := bridgeCall(t, owner, base+"/query", local+"/query", nip98.Options{Body: q}, "", nil, q); status != http.StatusOK {
		t.Errorf("/query with a token for %s = %s; want 200 (a loopback spelling of the relay)", local, body(status, b))
	}

	// git: a token for the same path on another host, Host header to match.
	repo := "/git/" + owner.pk + "/r.git"
	sec, _ := nostrkey.ParseSecret(owner.sk)
	auth, err := nip98.Header(sec, "http://other.example"+repo, "GET", nip98.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(testCtx(t), "GET", base+repo+"/info/refs?service=git-upload-pack", nil)
	req.Host = "other.example"
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("git with a token for other.example and Host: other.example = %d; want 401", resp.StatusCode)
	}
}

// TestAttackNIP98TokenForOtherHostWithPublicURL: --public-url fixed the
// scheme but the host still came from the request, so a token for
// https://other.example/query passed with Host: other.example. Tokens for
// the public URL pass whatever Host the proxy sends.
func TestAttackNIP98TokenForOtherHostWithPublicURL(t *testing.T) {
	owner := newKey(t)
	url := execRelay(t, "--owner", owner.pk, "--public-url", "wss://relay.example")
	base := httpOf(url)
	q := jsonOf(t, []nostr.Filter{{Kinds: []int{1}}})
	if status, b := bridgeCall(t, owner, base+"/query", "https://other.example/query", nip98.Options{Body: q}, "other.example", nil, q); status != http.StatusUnauthorized {
		t.Errorf("/query with a token for other.example and Host: other.example = %d %s; want 401", status, b)
	}
	for _, u := range []string{"https://relay.example/query", "https://RELAY.example:443/query"} {
		if status, b := bridgeCall(t, owner, base+"/query", u, nip98.Options{Body: q}, "", nil, q); status != http.StatusOK {
			t.Errorf("/query with a token for %s = %d %s; want 200", u, status, b)
		}
	}
	w := dialWS(t, url, &websocket.DialOptions{Host: "other.example"})
	if ok, reason := w.auth(owner, "wss://other.example"); ok {
		t.Errorf("AUTH naming wss://other.example behind --public-url wss://relay.example accepted")
	} else if !strings.Contains(reason, "relay.example") {
		t.Errorf("AUTH refusal %q does not name the relay's URL", reason)
	}
	w = dialWS(t, url, nil)
	if ok, reason := w.auth(owner, "wss://relay.example/"); !ok {
		t.Errorf("AUTH naming wss://relay.example/ refused: %s", reason)
	}
}

// TestAttackAuthRelayTagForOtherHost: the NIP-42 relay tag was compared
// with the upgrade request's Host, so an AUTH event signed for another
// relay (ws://other.example) was accepted on a connection that claimed
// Host: other.example.
func TestAttackAuthRelayTagForOtherHost(t *testing.T) {
	owner := newKey(t)
	url := execRelay(t, "--owner", owner.pk)
	w := dialWS(t, url, &websocket.DialOptions{Host: "other.example"})
	if ok, _ := w.auth(owner, "ws://other.example"); ok {
		t.Errorf("AUTH naming ws://other.example with Host: other.example accepted")
	}
	w = dialWS(t, url, &websocket.DialOptions{Host: "other.example"})
	local := strings.Replace(url, "127.0.0.1", "localhost", 1)
	if ok, reason := w.auth(owner, local); !ok {
		t.Errorf("AUTH naming %s refused: %s", local, reason)
	}
}

// TestAttackNIP98BodyWithoutPayload: a bridge token without a payload tag
// was accepted for any body, so a token seen once could carry another body
// within its minute (replay protection keys on the token, not the body).
func TestAttackNIP98BodyWithoutPayload(t *testing.T) {
	owner := newKey(t)
	url := execRelay(t, "--owner", owner.pk)
	ev := jsonOf(t, signed(t, owner, 1, "body"))
	status, b := bridgeCall(t, owner, httpOf(url)+"/events", "", nip98.Options{}, "", nil, ev)
	if status != http.StatusUnauthorized || !strings.Contains(b, "payload") {
		t.Errorf("/events without a payload tag = %d %s; want 401 about the payload", status, b)
	}
	status, b = bridgeCall(t, owner, httpOf(url)+"/events", "", nip98.Options{Body: []byte("other")}, "", nil, ev)
	if status != http.StatusUnauthorized || !strings.Contains(b, "payload") {
		t.Errorf("/events with a payload tag for another body = %d %s; want 401 about the payload", status, b)
	}
	if status, b := bridgeCall(t, owner, httpOf(url)+"/events", "", nip98.Options{Body: ev}, "", nil, ev); status != http.StatusOK {
		t.Errorf("/events with the right payload tag = %d %s; want 200", status, b)
	}
}

// TestWildcardListenNames: listening on 0.0.0.0 without --public-url, the
// relay answers to the loopback names and its interface addresses, not to
// a name the request makes up.
func TestWildcardListenNames(t *testing.T) {
	owner := newKey(t)
	url := execRelay(t, "--owner", owner.pk, "--listen", "0.0.0.0:0")
	host, port, err := net.SplitHostPort(strings.TrimPrefix(url, "ws://"))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + port
	q := jsonOf(t, []nostr.Filter{{Kinds: []int{1}}})
	names := []string{"http://localhost:" + port, base, "http://" + net.JoinHostPort(host, port)}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				names = append(names, "http://"+net.JoinHostPort(n.IP.String(), port))
				break
			}
		}
	}
	for _, u := range names {
		if status, b := bridgeCall(t, owner, base+"/query", u+"/query", nip98.Options{Body: q}, "", nil, q); status != http.StatusOK {
			t.Errorf("/query with a token for %s on a wildcard listener = %d %s; want 200", u, status, b)
		}
	}
	if status, b := bridgeCall(t, owner, base+"/query", "http://other.example:"+port+"/query", nip98.Options{Body: q}, "other.example:"+port, nil, q); status != http.StatusUnauthorized {
		t.Errorf("/query with a token for other.example on a wildcard listener = %d %s; want 401", status, b)
	}
}
