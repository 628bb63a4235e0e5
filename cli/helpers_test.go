package cli

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/internal/testexe"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"
)

type testKey struct{ sk, pk string }

func newKey(t testing.TB) testKey {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{sk, pk}
}

// plainRelay is a stock khatru relay (no HTTP bridge in its NIP-11), in
// memory, on 127.0.0.1:0: the CLI must use NIP-01 websocket against it.
type plainRelay struct {
	base  string // http://127.0.0.1:PORT
	store *slicestore.SliceStore
	kr    *khatru.Relay
}

// startPlainRelay starts it; with auth set, every REQ and EVENT needs a
// NIP-42 login first, and only the members (when given) may write.
func startPlainRelay(t testing.TB, auth bool, members ...string) *plainRelay {
	t.Helper()
	store := &slicestore.SliceStore{}
	if err := store.Init(); err != nil {
		t.Fatal(err)
	}
	kr := khatru.NewRelay()
	kr.Info.Name = "plain test relay"
	kr.StoreEvent = append(kr.StoreEvent, store.SaveEvent)
	kr.QueryEvents = append(kr.QueryEvents, store.QueryEvents)
	kr.DeleteEvent = append(kr.DeleteEvent, store.DeleteEvent)
	kr.ReplaceEvent = append(kr.ReplaceEvent, store.ReplaceEvent)
	kr.CountEvents = append(kr.CountEvents, store.CountEvents)
	if auth {
		kr.Info.Limitation = nil
		kr.OnConnect = append(kr.OnConnect, khatru.RequestAuth)
		kr.RejectFilter = append(kr.RejectFilter, func(ctx context.Context, _ nostr.Filter) (bool, string) {
			if khatru.GetAuthed(ctx) == "" {
				return true, "auth-required: log in first"
			}
			return false, ""
		})
		kr.RejectEvent = append(kr.RejectEvent, func(ctx context.Context, _ *nostr.Event) (bool, string) {
			who := khatru.GetAuthed(ctx)
			if who == "" {
				return true, "auth-required: log in first"
			}
			if len(members) > 0 && !contains(members, who) {
				return true, "restricted: not a member of this relay"
			}
			return false, ""
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: kr}
	done := make(chan struct{})
	go func() { // stopped by srv.Close in Cleanup
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return &plainRelay{base: "http://" + ln.Addr().String(), store: store, kr: kr}
}

// put stores a signed event directly.
func (r *plainRelay) put(t testing.TB, ev *nostr.Event) {
	t.Helper()
	if err := r.store.SaveEvent(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
}

// all returns every stored event matching f.
func (r *plainRelay) all(t testing.TB, f nostr.Filter) []*nostr.Event {
	t.Helper()
	ch, err := r.store.QueryEvents(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	var out []*nostr.Event
	for ev := range ch {
		out = append(out, ev)
	}
	return out
}

// signed makes an event signed by k.
func signed(t testing.TB, k testKey, kind int, content string, tags nostr.Tags, at int64) *nostr.Event {
	t.Helper()
	if at == 0 {
		at = time.Now().Unix()
	}
	ev := &nostr.Event{Kind: kind, Content: content, Tags: tags, CreatedAt: nostr.Timestamp(at)}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	if err := ev.Sign(k.sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

var (
	linkMu    sync.Mutex
	linkPaths = map[testing.TB]string{}
)

// buzzExe returns a symlink named buzz to the built binary, one per test.
func buzzExe(t testing.TB) string {
	t.Helper()
	linkMu.Lock()
	defer linkMu.Unlock()
	if p, ok := linkPaths[t]; ok {
		return p
	}
	p := testexe.Link(t, "buzz")
	linkPaths[t] = p
	t.Cleanup(func() {
		linkMu.Lock()
		delete(linkPaths, t)
		linkMu.Unlock()
	})
	return p
}

// result is one run of the buzz executable.
type result struct {
	stdout, stderr string
	code           int
}

// run runs buzz with args against relay base as key k (empty sk: no key).
func runBuzz(t testing.TB, base string, k testKey, stdin string, args ...string) result {
	t.Helper()
	return runBuzzEnv(t, []string{"BUZZ_RELAY_URL=" + base, "BUZZ_PRIVATE_KEY=" + k.sk}, stdin, args...)
}

func runBuzzEnv(t testing.TB, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, buzzExe(t), args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, errOut, code := testexe.Run(t, cmd)
	return result{out, errOut, code}
}

func testexeNode(t testing.TB) (string, string) { return testexe.NodeModules(t) }
