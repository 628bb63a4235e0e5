package relayclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/leakcheck"
	"buzzbox/internal/workspace"
)

// forgeries are a good event and two bad ones by the same key: one whose
// signature is another event's, one whose id is not its content's hash
// (its signature still good over the content: go-nostr's CheckSignature
// hashes the content and never looks at the id, so it passed).
func forgeries(t *testing.T) (good *nostr.Event, bad []*nostr.Event) {
	key := newSecret(t)
	good = signed(t, key, &nostr.Event{Kind: workspace.KindStream, Content: "good"})
	other := signed(t, key, &nostr.Event{Kind: workspace.KindStream, Content: "other"})
	badSig := *signed(t, key, &nostr.Event{Kind: workspace.KindStream, Content: "bad sig"})
	badSig.Sig = other.Sig
	badID := *signed(t, key, &nostr.Event{Kind: workspace.KindStream, Content: "bad id"})
	badID.ID = strings.Repeat("ab", 32)
	return good, []*nostr.Event{&badSig, &badID}
}

// TestAttackForgedEventsDropped: a relay that serves events with a
// borrowed signature or an id that does not hash them gets none of them
// through the client, on its own websocket or a Subscriber's, so what a
// query returns needs no second check (buzz mem made one).
func TestAttackForgedEventsDropped(t *testing.T) {
	leakcheck.Check(t)
	good, bad := forgeries(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == "application/nostr+json" {
			w.Header().Set("Content-Type", "application/nostr+json")
			w.Write([]byte(`{}`))
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		for {
			f := readFrame(ctx, t, c)
			if f == nil {
				return
			}
			var verb, sub string
			json.Unmarshal(f[0], &verb)
			if verb != "REQ" {
				continue
			}
			json.Unmarshal(f[1], &sub)
			for _, ev := range append([]*nostr.Event{bad[0], good}, bad[1:]...) {
				b, _ := json.Marshal([]any{"EVENT", sub, ev})
				c.Write(ctx, websocket.MessageText, b)
			}
			b, _ := json.Marshal([]any{"EOSE", sub})
			c.Write(ctx, websocket.MessageText, b)
		}
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")

	c := New(url, Options{Timeout: 10 * time.Second})
	defer c.Close()
	evs, err := c.Query(t.Context(), nostr.Filter{Kinds: []int{workspace.KindStream}})
	if err != nil || len(evs) != 1 || evs[0].ID != good.ID {
		t.Errorf("websocket query = %d events, %v; want only the good one", len(evs), err)
	}

	s := NewSubscriber(url, SubscriberOptions{Key: newSecret(t)})
	q := make(chan *nostr.Event, 4)
	s.queries["q-1"] = q
	for _, ev := range append([]*nostr.Event{good}, bad...) {
		s.event(context.Background(), nil, "q-1", ev)
	}
	close(q)
	var got []string
	for ev := range q {
		got = append(got, ev.ID)
	}
	if len(got) != 1 || got[0] != good.ID {
		t.Errorf("subscriber passed on %v; want only the good event %s", got, good.ID)
	}
}
