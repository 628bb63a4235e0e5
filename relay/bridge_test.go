package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
)

// post sends body to url with a NIP-98 header signed by k for signedURL
// (url when empty) and returns the status and body.
func post(t *testing.T, k testKey, url, signedURL string, body []byte) (int, string) {
	t.Helper()
	if signedURL == "" {
		signedURL = url
	}
	return postHeader(t, url, nip98Header(t, k, signedURL, body), body)
}

func nip98Header(t *testing.T, k testKey, url string, body []byte) string {
	t.Helper()
	sec, err := nostrkey.ParseSecret(k.sk)
	if err != nil {
		t.Fatal(err)
	}
	h, err := nip98.Header(sec, url, "POST", nip98.Options{Body: body, Nonce: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func postHeader(t *testing.T, url, auth string, body []byte) (int, string) {
	t.Helper()
	return postWith(t, url, auth, "", body)
}

// postWith also sends an x-auth-tag header when authTag is not empty.
func postWith(t *testing.T, url, auth, authTag string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), "POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if authTag != "" {
		req.Header.Set("x-auth-tag", authTag)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b)
}

func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBridgeQueryAndEvents(t *testing.T) {
	owner, stranger := newKey(t), newKey(t)
	r := startRelay(t, Config{Owner: owner.pk})
	base := r.HTTPURL()

	// A websocket subscriber sees what arrives through the bridge.
	c := login(t, r.URL(), owner)
	sub, err := c.Subscribe(testCtx(t), nostr.Filters{{Kinds: []int{1}}})
	if err != nil {
		t.Fatal(err)
	}
	<-sub.EndOfStoredEvents

	ev := signed(t, owner, 1, "via bridge")
	status, body := post(t, owner, base+"/events", "", jsonOf(t, ev))
	if status != 200 || !strings.Contains(body, `"accepted":true`) || !strings.Contains(body, ev.ID) {
		t.Fatalf("POST /events = %d %s", status, body)
	}
	select {
	case got := <-sub.Events:
		if got.ID != ev.ID {
			t.Fatalf("websocket got %s; want %s", got.ID, ev.ID)
		}
	case <-testCtx(t).Done():
		t.Fatal("bridge event not broadcast")
	}

	q := jsonOf(t, []nostr.Filter{{Kinds: []int{1}, Authors: []string{owner.pk}}})
	status, body = post(t, owner, base+"/query", "", q)
	var evs []nostr.Event
	if status != 200 || json.Unmarshal([]byte(body), &evs) != nil || len(evs) != 1 || evs[0].ID != ev.ID {
		t.Fatalf("POST /query = %d %s", status, body)
	}
	status, body = post(t, owner, base+"/count", "", q)
	if status != 200 || strings.TrimSpace(body) != `{"count":1}` {
		t.Fatalf("POST /count = %d %s", status, body)
	}
	// Empty result is [] not null.
	status, body = post(t, owner, base+"/query", "", jsonOf(t, []nostr.Filter{{Kinds: []int{7}}}))
	if status != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("empty /query = %d %s; want []", status, body)
	}

	// The u tag may spell loopback differently from the Host header.
	localhost := strings.Replace(base, "127.0.0.1", "localhost", 1)
	if status, body = post(t, owner, localhost+"/query", base+"/query", q); status != 200 {
		t.Errorf("u=127.0.0.1 for a localhost request = %d %s; want 200", status, body)
	}

	// Refusals.
	h := nip98Header(t, owner, base+"/query", q)
	if status, _ = postHeader(t, base+"/query", h, q); status != 200 {
		t.Fatalf("first use of a token = %d", status)
	}
	if status, body = postHeader(t, base+"/query", h, q); status != 401 || !strings.Contains(body, "NIP-98: replay detected") {
		t.Errorf("replayed token = %d %s; want 401 replay detected", status, body)
	}
	if status, _ = postHeader(t, base+"/query", nip98Header(t, owner, base+"/query", []byte("[]")), q); status != 401 {
		t.Errorf("wrong payload hash = %d; want 401", status)
	}
	if status, _ = post(t, owner, base+"/query", "http://relay.example.com/query", q); status != 401 {
		t.Errorf("u naming another host = %d; want 401", status)
	}
	if status, _ = postHeader(t, base+"/query", "", q); status != 401 {
		t.Errorf("no token = %d; want 401", status)
	}
	if status, body = post(t, stranger, base+"/query", "", q); status != 403 || !strings.Contains(body, "restricted") {
		t.Errorf("stranger = %d %s; want 403 restricted", status, body)
	}
	bad := signed(t, owner, 1, "x")
	bad.Content = "y"
	if status, body = post(t, owner, base+"/events", "", jsonOf(t, bad)); status != 400 || !strings.Contains(body, "invalid:") {
		t.Errorf("bad id = %d %s; want 400 invalid:", status, body)
	}
	if status, _ = post(t, owner, base+"/events", "", jsonOf(t, signed(t, owner, 20001, "online"))); status != 400 {
		t.Errorf("ephemeral over the bridge = %d; want 400", status)
	}

	// Deletion through the bridge.
	if status, body = post(t, owner, base+"/events", "", jsonOf(t, signed(t, owner, 5, "", nostr.Tag{"e", ev.ID}))); status != 200 {
		t.Fatalf("deletion = %d %s", status, body)
	}
	status, body = post(t, owner, base+"/query", "", jsonOf(t, []nostr.Filter{{IDs: []string{ev.ID}}}))
	if strings.TrimSpace(body) != "[]" {
		t.Errorf("after deletion /query = %d %s", status, body)
	}
}

func TestBridgeChannelRulesAndPaging(t *testing.T) {
	owner, alice := newKey(t), newKey(t)
	r := startRelay(t, Config{Owner: owner.pk, Allow: []string{alice.pk}})
	base := r.HTTPURL()
	h := nostr.Tag{"h", chanA}
	for _, ev := range []nostr.Event{
		signed(t, owner, workspace.KindCreateGroup, "", h, nostr.Tag{"name", "p"}, nostr.Tag{"visibility", "private"}),
		signed(t, owner, 9, "one", h),
		signed(t, owner, 9, "two", h),
		signed(t, owner, 9, "three", h),
	} {
		if status, body := post(t, owner, base+"/events", "", jsonOf(t, ev)); status != 200 {
			t.Fatalf("POST /events = %d %s", status, body)
		}
	}
	if status, body := post(t, alice, base+"/events", "", jsonOf(t, signed(t, alice, 9, "me too", h))); status != 403 {
		t.Errorf("non-member post = %d %s; want 403", status, body)
	}
	q := jsonOf(t, []nostr.Filter{{Kinds: []int{9}, Tags: nostr.TagMap{"h": {chanA}}}})
	if _, body := post(t, alice, base+"/query", "", q); strings.TrimSpace(body) != "[]" {
		t.Errorf("non-member /query of a private channel = %s", body)
	}
	_, body := post(t, owner, base+"/query", "", q)
	var all []nostr.Event
	json.Unmarshal([]byte(body), &all)
	if len(all) != 3 {
		t.Fatalf("member /query = %d events", len(all))
	}
	// Keyset paging: everything strictly after the first event in order.
	page := []map[string]any{{"kinds": []int{9}, "#h": []string{chanA}, "until": all[0].CreatedAt, "before_id": all[0].ID, "limit": 10}}
	_, body = post(t, owner, base+"/query", "", jsonOf(t, page))
	var rest []nostr.Event
	json.Unmarshal([]byte(body), &rest)
	if len(rest) != 2 || rest[0].ID != all[1].ID {
		t.Errorf("page after %s = %d events", all[0].ID[:8], len(rest))
	}
	// NIP-50 search.
	_, body = post(t, owner, base+"/query", "", jsonOf(t, []map[string]any{{"kinds": []int{9}, "search": "TWO"}}))
	if !strings.Contains(body, `"content":"two"`) || strings.Contains(body, `"content":"one"`) {
		t.Errorf("search = %s", body)
	}
}
