package relayclient

import (
	"buzzbox/internal/workspace"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func TestDecodeEvents(t *testing.T) {
	n := 0
	for _, in := range []string{"[]", "null", `[{"id":"a","kind":1,"tags":[]},{"id":"b"}]`} {
		if err := decodeEvents(strings.NewReader(in), func(*nostr.Event) { n++ }); err != nil {
			t.Errorf("decodeEvents(%s): %v", in, err)
		}
	}
	if n != 2 {
		t.Errorf("decoded %d events; want 2", n)
	}
	for _, in := range []string{"{}", "[1]", "[", `"x"`} {
		if err := decodeEvents(strings.NewReader(in), func(*nostr.Event) {}); err == nil {
			t.Errorf("decodeEvents(%s) accepted", in)
		}
	}
}

func FuzzDecodeEvents(f *testing.F) {
	for _, s := range []string{"[]", "null", `[{"id":"a","kind":1,"tags":[]},{"id":"b"}]`, "[1]", "{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		if decodeEvents(bytes.NewReader(b), func(ev *nostr.Event) {
			if ev == nil {
				t.Fatal("nil event")
			}
			n++
		}) == nil && n > len(b) {
			t.Errorf("%d events from %d bytes", n, len(b))
		}
	})
}

// TestBridgeStatusesClassified: each bridge answer becomes the error the
// CLI prints, retried only where retrying can help, a write that may have
// landed reported as delivery_unknown, and a 404 falling back to the
// websocket.
func TestBridgeStatusesClassified(t *testing.T) {
	key := newSecret(t)
	ev := signed(t, key, &nostr.Event{Kind: workspace.KindStream, Content: "x"})
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		authTag  string
		attempts int
		category string
		retry    bool
		text     string
	}{
		{"refused", 400, `{"error":"invalid: bad tag"}`, "", 1, CatRelay, false, "relay error 400: invalid: bad tag"},
		{"stale attestation", 403, `{"error":"restricted: revoked"}`, `["auth"]`, 1, CatAuth, false, staleAuthTagHint},
		{"rate limited", 429, `{"error":"rate-limited: retry in 0s"}`, "", MaxAttempts, CatRelay, true, "relay error 429"},
		{"gateway", 502, `bad gateway`, "", MaxAttempts, CatDeliveryUnknown, false, "delivery unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					io.WriteString(w, `{"http_bridge":{"query":"/query"}}`)
					return
				}
				n.Add(1)
				if r.Header.Get("Authorization") == "" || r.Header.Get(workspace.HeaderAuthTag) != tc.authTag {
					t.Errorf("POST without its NIP-98 token or x-auth-tag: %v", r.Header)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := New(srv.URL, Options{Key: key, AuthTagJSON: tc.authTag})
			_, err := c.Publish(t.Context(), ev)
			var e *Error
			if !errors.As(err, &e) || e.Category != tc.category || e.Retryable != tc.retry || !strings.Contains(e.Message, tc.text) {
				t.Errorf("publish = %#v; want category %s, retryable %v, text %q", err, tc.category, tc.retry, tc.text)
			}
			if got := n.Load(); got != int64(tc.attempts) {
				t.Errorf("%d POSTs; want %d", got, tc.attempts)
			}
		})
	}
}

// TestSignedCarriesAttestation: a client given its attestation only as
// JSON (as the harness's is) signs the tag into Signed's NIP-98 token,
// where the relay's git routes read it.
func TestSignedCarriesAttestation(t *testing.T) {
	key := newSecret(t)
	const attestation = `["auth","aa","bb","cc"]`
	var token string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token = r.Header.Get("Authorization")
		io.WriteString(w, "diff")
	}))
	defer srv.Close()
	c := New(srv.URL, Options{Key: key, AuthTagJSON: attestation})
	if _, err := c.Signed(t.Context(), http.MethodGet, srv.URL+"/git/x/y.git/buzz-diff", nil, 100); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(token, "Nostr "))
	if err != nil {
		t.Fatalf("token %q: %v", token, err)
	}
	var ev nostr.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if got := ev.Tags.Find("auth"); len(got) < 2 || got[1] != "aa" {
		t.Errorf("token tags %v; want the attestation %s", ev.Tags, attestation)
	}
}
