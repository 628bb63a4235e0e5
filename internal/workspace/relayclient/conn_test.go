package relayclient

import (
	"buzzbox/internal/leakcheck"
	"buzzbox/internal/workspace"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// fakeRelay accepts one websocket and runs script on it.
func fakeRelay(t *testing.T, script func(ctx context.Context, c *websocket.Conn)) string {
	t.Helper()
	leakcheck.Check(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(MaxFrameBytes)
		script(r.Context(), c)
	}))
	t.Cleanup(func() { srv.Close() })
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func readFrame(ctx context.Context, t *testing.T, c *websocket.Conn) []json.RawMessage {
	_, b, err := c.Read(ctx)
	if err != nil {
		return nil
	}
	var f []json.RawMessage
	if json.Unmarshal(b, &f) != nil {
		t.Errorf("client sent %q, not a JSON array", b)
	}
	return f
}

// TestAttackHugeChallengeNotSigned: a relay's challenge over
// maxChallengeBytes is never answered, so a hostile relay cannot make the
// client sign (and send) an event of its choosing size; a login waiting
// for a challenge gives up at its deadline.
func TestAttackHugeChallengeNotSigned(t *testing.T) {
	got := make(chan string, 4)
	url := fakeRelay(t, func(ctx context.Context, c *websocket.Conn) {
		b, _ := json.Marshal([]any{"AUTH", strings.Repeat("c", maxChallengeBytes+1)})
		c.Write(ctx, websocket.MessageText, b)
		for {
			f := readFrame(ctx, t, c)
			if f == nil {
				return
			}
			got <- string(f[0])
		}
	})
	key := newSecret(t)
	c, err := Dial(t.Context(), url, ConnOptions{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, err = c.Login(t.Context(), 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no AUTH challenge") {
		t.Fatalf("login = %v; want no usable challenge", err)
	}
	select {
	case label := <-got:
		t.Fatalf("client sent %s in answer to an over-long challenge", label)
	default:
	}
}

// TestLoginAnswersChallenge: the AUTH event names the connection's URL
// and the challenge, carries the NIP-OA tag, and the OK ends the login;
// frames that came before it are handed back.
func TestLoginAnswersChallenge(t *testing.T) {
	key := newSecret(t)
	tag := nostr.Tag{"auth", strings.Repeat("a", 64), "", strings.Repeat("b", 128)}
	url := fakeRelay(t, func(ctx context.Context, c *websocket.Conn) {
		c.Write(ctx, websocket.MessageText, []byte(`["NOTICE","hello"]`))
		c.Write(ctx, websocket.MessageText, []byte(`["AUTH","ch-1"]`))
		f := readFrame(ctx, t, c)
		var ev nostr.Event
		if len(f) != 2 || string(f[0]) != `"AUTH"` || json.Unmarshal(f[1], &ev) != nil {
			t.Errorf("client answered %s; want an AUTH event", f)
			return
		}
		if ok, _ := ev.CheckSignature(); !ok || ev.Kind != workspace.KindAuth ||
			ev.Tags.FindWithValue("challenge", "ch-1") == nil || ev.Tags.Find("relay") == nil || ev.Tags.FindLast("auth") == nil {
			t.Errorf("AUTH event = %v", ev)
		}
		b, _ := json.Marshal([]any{"OK", ev.ID, true, ""})
		c.Write(ctx, websocket.MessageText, b)
		readFrame(ctx, t, c) // until the client goes
	})
	c, err := Dial(t.Context(), url, ConnOptions{Key: key, AuthTag: tag})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pending, err := c.Login(t.Context(), 5*time.Second)
	if err != nil || !c.Authed() {
		t.Fatalf("login: %v (authed %v)", err, c.Authed())
	}
	if len(pending) != 1 {
		t.Fatalf("pending = %v; want the NOTICE", pending)
	}
	if n, ok := pending[0].(*nostr.NoticeEnvelope); !ok || string(*n) != "hello" {
		t.Errorf("pending[0] = %v; want the NOTICE", pending[0])
	}
}

// TestLoginRefused: an OK false to our AUTH is an *AuthRefusedError,
// temporary only when the relay blames itself.
func TestLoginRefused(t *testing.T) {
	for _, reason := range []string{"restricted: not a member", "error: database down"} {
		url := fakeRelay(t, func(ctx context.Context, c *websocket.Conn) {
			c.Write(ctx, websocket.MessageText, []byte(`["AUTH","x"]`))
			f := readFrame(ctx, t, c)
			var ev nostr.Event
			if len(f) == 2 {
				json.Unmarshal(f[1], &ev)
			}
			b, _ := json.Marshal([]any{"OK", ev.ID, false, reason})
			c.Write(ctx, websocket.MessageText, b)
			readFrame(ctx, t, c)
		})
		c, err := Dial(t.Context(), url, ConnOptions{Key: newSecret(t)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Login(t.Context(), 5*time.Second)
		c.CloseNow()
		refused, ok := err.(*AuthRefusedError)
		if !ok || refused.Reason != reason || refused.Temporary() != strings.HasPrefix(reason, "error:") {
			t.Errorf("login refused with %q = %v", reason, err)
		}
	}
}

// TestFilterExtensionsOnTheWire: before_id and depth_limit travel beside
// the NIP-01 fields, keys sorted, and a plain filter reads back the same.
func TestFilterExtensionsOnTheWire(t *testing.T) {
	until := nostr.Timestamp(100)
	f := Filter{Filter: nostr.Filter{Kinds: []int{workspace.KindStream}, Tags: nostr.TagMap{"h": {"c"}}, Until: &until, Limit: 5}, BeforeID: "ab", DepthLimit: 2}
	b, err := json.Marshal([]Filter{f})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"#h":["c"],"before_id":"ab","depth_limit":2,"kinds":[9],"limit":5,"until":100}]`; string(b) != want {
		t.Errorf("filter = %s; want %s", b, want)
	}
	var back []nostr.Filter
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 1 || !nostr.FilterEqual(back[0], f.Filter) {
		t.Errorf("read back %+v, %v; want %+v", back, err, f.Filter)
	}
}
