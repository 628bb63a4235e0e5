package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
)

// stubRequest is one request the stub bridge saw.
type stubRequest struct {
	path, auth, authTag string
	body                []byte
}

// stubBridge is an HTTP relay bridge that records requests and answers
// with a scripted handler: reply(path, n) gives status and body for the
// n-th request (0-based) to that path.
type stubBridge struct {
	base  string
	mu    sync.Mutex
	seen  []stubRequest
	reply func(path string, n int, body []byte) (int, string)
}

func startStubBridge(t *testing.T, reply func(path string, n int, body []byte) (int, string)) *stubBridge {
	t.Helper()
	s := &stubBridge{reply: reply}
	counts := map[string]int{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/nostr+json")
		io.WriteString(w, `{"name":"stub","http_bridge":{"query":"POST /query","events":"POST /events"}}`)
	})
	handle := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, stubRequest{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("x-auth-tag"), body})
		n := counts[r.URL.Path]
		counts[r.URL.Path]++
		s.mu.Unlock()
		code, out := s.reply(r.URL.Path, n, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, out)
	}
	mux.HandleFunc("POST /query", handle)
	mux.HandleFunc("POST /events", handle)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() { // stopped by srv.Close in Cleanup
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() { srv.Close(); <-done })
	s.base = "http://" + ln.Addr().String()
	return s
}

func (s *stubBridge) requests() []stubRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]stubRequest(nil), s.seen...)
}

// accept answers /events with acceptance and /query with events.
func accept(events ...*nostr.Event) func(string, int, []byte) (int, string) {
	return func(path string, _ int, body []byte) (int, string) {
		if path == "/events" {
			var ev nostr.Event
			json.Unmarshal(body, &ev)
			return 200, `{"event_id":"` + ev.ID + `","accepted":true,"message":""}`
		}
		b, _ := json.Marshal(events)
		if events == nil {
			b = []byte("[]")
		}
		return 200, string(b)
	}
}

// checkNIP98 verifies a request's Authorization header.
func checkNIP98(t *testing.T, base string, r stubRequest) string {
	t.Helper()
	if !strings.HasPrefix(r.auth, "Nostr ") {
		t.Fatalf("Authorization = %q; want Nostr <token>", r.auth)
	}
	ev, err := nip98.ParseHeader(r.auth)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := ev.CheckSignature(); !ok || ev.Kind != 27235 {
		t.Fatalf("token event kind %d, signature ok %v", ev.Kind, ok)
	}
	sum := sha256.Sum256(r.body)
	if tagValue(ev, "u") != base+r.path || tagValue(ev, "method") != "POST" ||
		tagValue(ev, "payload") != hex.EncodeToString(sum[:]) || len(tagValue(ev, "nonce")) != 36 {
		t.Fatalf("token tags = %v; want u %s, method POST, payload of body, nonce", ev.Tags, base+r.path)
	}
	return ev.ID
}

func TestBridgeSendAndNIP98(t *testing.T) {
	s := startStubBridge(t, accept())
	me := newKey(t)
	wsURL := "ws://" + strings.TrimPrefix(s.base, "http://") + "/"
	res := runBuzz(t, wsURL, me, "", "messages", "send", "--channel", testChannel, "--content", "hello")
	if res.code != 0 {
		t.Fatalf("send: exit %d %s", res.code, res.stderr)
	}
	var out map[string]any
	json.Unmarshal([]byte(res.stdout), &out)
	if out["accepted"] != true || out["mention_pubkeys"] == nil || len(out["mention_pubkeys"].([]any)) != 0 {
		t.Fatalf("send output = %s", res.stdout)
	}
	reqs := s.requests()
	if len(reqs) != 1 || reqs[0].path != "/events" {
		t.Fatalf("requests = %d; want one POST /events", len(reqs))
	}
	checkNIP98(t, s.base, reqs[0])
	var ev nostr.Event
	json.Unmarshal(reqs[0].body, &ev)
	if ok, _ := ev.CheckSignature(); !ok || ev.Kind != 9 || ev.Content != "hello" || !tagsEqual(ev.Tags, nostr.Tags{{"h", testChannel}}) {
		t.Fatalf("posted event = %v", ev)
	}

	for range 2 {
		runBuzz(t, s.base, me, "", "messages", "get", "--channel", testChannel)
	}
	reqs = s.requests()[1:]
	if len(reqs) != 2 || checkNIP98(t, s.base, reqs[0]) == checkNIP98(t, s.base, reqs[1]) {
		t.Fatal("two identical queries share a NIP-98 event id")
	}
	if string(reqs[0].body) != `[{"#h":["`+testChannel+`"],"kinds":[9,40002,40008,45001,45003],"limit":50}]` {
		t.Fatalf("get filter = %s", reqs[0].body)
	}
}

func TestBridgeGetFiltersAndOrder(t *testing.T) {
	me := newKey(t)
	a := signed(t, me, 9, "first", nostr.Tags{{"h", testChannel}}, 100)
	b := signed(t, me, 9, "second", nostr.Tags{{"h", testChannel}}, 200)
	s := startStubBridge(t, accept(b, a))
	res := runBuzz(t, s.base, me, "", "messages", "get", "--channel", testChannel, "--limit", "999", "--before", "100")
	var got []outEvent
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &got) != nil || len(got) != 2 || got[0].Content != "first" {
		t.Fatalf("get: exit %d, %s", res.code, res.stdout)
	}
	var f []map[string]any
	json.Unmarshal(s.requests()[0].body, &f)
	if f[0]["limit"] != 200.0 || f[0]["until"] != 100.0 {
		t.Fatalf("filter = %v; want limit 200, until 100", f)
	}
	res = runBuzz(t, s.base, me, "", "--format", "compact", "messages", "thread", "--channel", testChannel, "--event", a.ID)
	var compact []map[string]any
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &compact) != nil || len(compact[0]) != 3 {
		t.Fatalf("thread compact: exit %d, %s %s", res.code, res.stdout, res.stderr)
	}
	reqs := s.requests()
	json.Unmarshal(reqs[len(reqs)-1].body, &f)
	if len(f) != 2 || f[1]["ids"] == nil || f[0]["#e"] == nil {
		t.Fatalf("thread query = %s; want replies and root filters in one body", reqs[len(reqs)-1].body)
	}
}

func TestBridgeRetriesAndStatuses(t *testing.T) {
	me := newKey(t)
	t.Run("429 then ok", func(t *testing.T) {
		s := startStubBridge(t, func(path string, n int, body []byte) (int, string) {
			if n == 0 {
				return 429, `{"error":"rate-limited: quota exceeded; retry in 1s"}`
			}
			return accept()(path, n, body)
		})
		res := runBuzz(t, s.base, me, "", "messages", "send", "--channel", testChannel, "--content", "x")
		reqs := s.requests()
		if res.code != 0 || len(reqs) != 2 || checkNIP98(t, s.base, reqs[0]) == checkNIP98(t, s.base, reqs[1]) {
			t.Fatalf("exit %d, %d requests; want success on a second, freshly signed attempt", res.code, len(reqs))
		}
		if string(reqs[0].body) != string(reqs[1].body) {
			t.Fatal("the retry re-signed the message")
		}
	})
	t.Run("503 x3", func(t *testing.T) {
		s := startStubBridge(t, func(string, int, []byte) (int, string) { return 503, `{"error":"busy"}` })
		res := runBuzz(t, s.base, me, "", "channels", "list")
		fails(t, res, 2, catRelay)
		if len(s.requests()) != 3 || !strings.Contains(res.stderr, "relay error 503: busy") || !strings.Contains(res.stderr, `"retryable":true`) {
			t.Fatalf("%d requests, stderr %s", len(s.requests()), res.stderr)
		}
	})
	t.Run("502 on write", func(t *testing.T) {
		s := startStubBridge(t, func(string, int, []byte) (int, string) { return 502, `bad gateway` })
		res := runBuzz(t, s.base, me, "", "messages", "send", "--channel", testChannel, "--content", "x")
		fails(t, res, 2, catDeliveryUnknown)
		reqs := s.requests()
		if !strings.Contains(res.stderr, `"retryable":false`) || len(reqs) != 3 || string(reqs[0].body) != string(reqs[2].body) {
			t.Fatalf("%d requests, stderr %s", len(reqs), res.stderr)
		}
	})
	t.Run("401", func(t *testing.T) {
		s := startStubBridge(t, func(string, int, []byte) (int, string) { return 401, `{"error":"NIP-98: bad"}` })
		fails(t, runBuzz(t, s.base, me, "", "channels", "list"), 3, catAuth)
		if len(s.requests()) != 1 {
			t.Fatalf("401 was retried: %d requests", len(s.requests()))
		}
	})
	t.Run("400", func(t *testing.T) {
		s := startStubBridge(t, func(string, int, []byte) (int, string) { return 400, `{"error":"nope"}` })
		res := runBuzz(t, s.base, me, "", "channels", "list")
		fails(t, res, 2, catRelay)
		if !strings.Contains(res.stderr, "relay error 400: nope") {
			t.Fatalf("stderr %s", res.stderr)
		}
	})
}

// attest signs a NIP-OA attestation of agent by owner.
func attest(t *testing.T, owner testKey, agent string) string {
	t.Helper()
	s, err := nostrkey.ParseSecret(owner.sk)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte("nostr:agent-auth:" + agent + ":"))
	sig, err := s.Sign(h[:])
	if err != nil {
		t.Fatal(err)
	}
	return `["auth","` + owner.pk + `","","` + hex.EncodeToString(sig[:]) + `"]`
}

func TestBridgeAuthTag(t *testing.T) {
	me, owner := newKey(t), newKey(t)
	tag := attest(t, owner, me.pk)
	s := startStubBridge(t, accept())
	env := []string{"BUZZ_RELAY_URL=" + s.base, "BUZZ_PRIVATE_KEY=" + me.sk, "BUZZ_AUTH_TAG=" + tag}
	res := runBuzzEnv(t, env, "", "messages", "send", "--channel", testChannel, "--content", "x")
	if res.code != 0 {
		t.Fatalf("exit %d %s", res.code, res.stderr)
	}
	r := s.requests()[0]
	var ev nostr.Event
	json.Unmarshal(r.body, &ev)
	n := 0
	for _, tg := range ev.Tags {
		if tg[0] == "auth" {
			n++
			b, _ := json.Marshal(tg)
			if string(b) != tag {
				t.Errorf("auth tag = %s; want %s", b, tag)
			}
		}
	}
	if n != 1 || r.authTag != tag {
		t.Fatalf("%d auth tags, x-auth-tag %q", n, r.authTag)
	}
	// The shorthand form is accepted too.
	short := strings.NewReplacer(`"`, "").Replace(tag)
	res = runBuzzEnv(t, []string{"BUZZ_RELAY_URL=" + s.base, "BUZZ_PRIVATE_KEY=" + me.sk, "BUZZ_AUTH_TAG=" + short}, "", "whoami")
	if res.code != 0 || !strings.Contains(res.stdout, owner.pk) {
		t.Fatalf("shorthand tag: exit %d %s %s", res.code, res.stdout, res.stderr)
	}
	forbid := startStubBridge(t, func(string, int, []byte) (int, string) { return 403, `{"error":"restricted: attestation revoked"}` })
	res = runBuzzEnv(t, []string{"BUZZ_RELAY_URL=" + forbid.base, "BUZZ_PRIVATE_KEY=" + me.sk, "BUZZ_AUTH_TAG=" + tag}, "", "channels", "list")
	fails(t, res, 3, catAuth)
	if !strings.Contains(res.stderr, "BUZZ_AUTH_TAG is set") {
		t.Errorf("403 with an auth tag: stderr %s lacks the stale-tag hint", res.stderr)
	}
	before := len(s.requests())
	other := newKey(t)
	res = runBuzzEnv(t, []string{"BUZZ_RELAY_URL=" + s.base, "BUZZ_PRIVATE_KEY=" + other.sk, "BUZZ_AUTH_TAG=" + tag}, "", "channels", "list")
	fails(t, res, 3, catAuth)
	if !strings.Contains(res.stderr, "BUZZ_AUTH_TAG verification failed for pubkey") || len(s.requests()) != before {
		t.Fatalf("stderr %s; requests made: %d", res.stderr, len(s.requests())-before)
	}
}
