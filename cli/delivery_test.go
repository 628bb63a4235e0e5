package cli

import (
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// TestWebsocketDeliveryUnknown: a relay that drops the connection after
// every EVENT, before any OK. The CLI must try again with the very same
// signed event and finally report delivery_unknown, not retryable.
func TestWebsocketDeliveryUnknown(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			io.WriteString(w, `{"name":"drops events"}`)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			_, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			var frame []json.RawMessage
			if json.Unmarshal(b, &frame) != nil || len(frame) < 2 {
				continue
			}
			var label string
			json.Unmarshal(frame[0], &label)
			if label == "EVENT" {
				var ev nostr.Event
				json.Unmarshal(frame[1], &ev)
				mu.Lock()
				ids = append(ids, ev.ID)
				mu.Unlock()
				return // gone without an OK
			}
		}
	})
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

	res := runBuzz(t, "http://"+ln.Addr().String(), newKey(t), "", "messages", "send", "--channel", testChannel, "--content", "lost?")
	fails(t, res, 2, catDeliveryUnknown)
	if !strings.Contains(res.stderr, `"retryable":false`) {
		t.Errorf("stderr %s; want retryable false", res.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != relayclient.MaxAttempts || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("event ids sent = %v; want %d attempts with one id", ids, relayclient.MaxAttempts)
	}
}

func TestBridgeSearch(t *testing.T) {
	me, a1, a2 := newKey(t), newKey(t), newKey(t)
	profiles := []*nostr.Event{
		signed(t, a1, workspace.KindProfile, `{"display_name":"Dana"}`, nil, 0),
		signed(t, a2, workspace.KindProfile, `{"name":"dana"}`, nil, 0),
	}
	hit := signed(t, a1, workspace.KindStream, "release notes", nostr.Tags{{"h", testChannel}}, 0)
	s := startStubBridge(t, func(path string, n int, body []byte) (int, string) {
		var f []map[string]any
		json.Unmarshal(body, &f)
		var out []*nostr.Event
		if kinds, _ := f[0]["kinds"].([]any); len(kinds) == 1 && kinds[0] == 0.0 {
			out = profiles
		} else {
			out = []*nostr.Event{hit}
		}
		b, _ := json.Marshal(out)
		return 200, string(b)
	})
	res := runBuzz(t, s.base, me, "", "messages", "search", "--query", "release", "--author", a1.pk)
	var got []outEvent
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &got) != nil || len(got) != 1 {
		t.Fatalf("search: exit %d %s %s", res.code, res.stdout, res.stderr)
	}
	var f []map[string]any
	json.Unmarshal(s.requests()[0].body, &f)
	if f[0]["search"] != "release" || f[0]["limit"] != 20.0 || len(f[0]["authors"].([]any)) != 1 {
		t.Fatalf("search filter = %v", f)
	}
	res = runBuzz(t, s.base, me, "", "messages", "search", "--author", "Dana")
	fails(t, res, 1, catUser)
	if !strings.Contains(res.stderr, a1.pk) || !strings.Contains(res.stderr, a2.pk) {
		t.Fatalf("ambiguous author: stderr %s; want both candidates", res.stderr)
	}
	fails(t, runBuzz(t, s.base, me, "", "messages", "search", "--author", "Nobody"), 1, catUser)
	fails(t, runBuzz(t, s.base, me, "", "messages", "search"), 1, catUser)
}
