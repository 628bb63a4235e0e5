package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lib/pq"
	"github.com/nbd-wtf/go-nostr"
)

// pgProxy stands between one instance and the test's PostgreSQL, so that
// a test can cut that instance off the database (every connection,
// the listening one too) and keep it off until restore: a database blip
// for one instance, with no race against its reconnect.
type pgProxy struct {
	ln     net.Listener
	socket string // the server's unix socket

	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
	listen map[net.Conn]bool // both ends of connections that sent LISTEN
	wg     sync.WaitGroup
}

// newPGProxy listens on 127.0.0.1:0 in front of db (a URL from
// startPostgres) and returns the proxy and the URL that goes through it.
func newPGProxy(t *testing.T, db string) (*pgProxy, string) {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{ln: ln, socket: filepath.Join(u.Query().Get("host"), ".s.PGSQL.5432"),
		conns: make(map[net.Conn]bool), listen: make(map[net.Conn]bool)}
	p.wg.Add(1)
	// Ends when the cleanup closes ln.
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p, "postgres://postgres@" + ln.Addr().String() + "/postgres?sslmode=disable"
}

func (p *pgProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("unix", p.socket)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[s] = true, true
		p.wg.Add(2)
		p.mu.Unlock()
		// Each ends when either side closes; cut closes both.
		go p.pipe(s, c, true)
		go p.pipe(c, s, false)
	}
}

// pipe copies src to dst; from the client it notes a LISTEN.
func (p *pgProxy) pipe(dst, src net.Conn, fromClient bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if fromClient && bytes.Contains(buf[:n], []byte("LISTEN ")) {
			p.mu.Lock()
			p.listen[dst], p.listen[src] = true, true
			p.mu.Unlock()
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	delete(p.listen, dst)
	delete(p.listen, src)
	p.mu.Unlock()
}

// cutPool closes every proxied connection but the listening one and
// refuses new ones: notifications still come, fetches fail.
func (p *pgProxy) cutPool() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		if !p.listen[c] {
			c.Close()
		}
	}
}

// cut closes every proxied connection and refuses new ones.
func (p *pgProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

// restore lets connections through again.
func (p *pgProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// rawLive subscribes to f on a raw websocket authenticated as k and
// waits for EOSE. Unlike go-nostr's client, which hands each event to its
// subscription from a goroutine of its own (so two events can swap), it
// reads the frames in the order the relay wrote them.
func rawLive(t *testing.T, relayURL string, k testKey, f nostr.Filter) *wsClient {
	t.Helper()
	w := dialWS(t, relayURL, nil)
	if ok, reason := w.auth(k, relayURL); !ok {
		t.Fatalf("AUTH on %s: %s", relayURL, reason)
	}
	w.send("REQ", "live", f)
	for {
		label, fields := w.next()
		switch label {
		case "EOSE":
			return w
		case "CLOSED":
			t.Fatalf("REQ closed: %s", fields)
		}
	}
}

// until reads the subscription's events up to the one with id stop and
// returns the ids before it, in the order they came.
func (w *wsClient) until(stop string) []string {
	w.t.Helper()
	var got []string
	for {
		label, fields := w.next()
		if label != "EVENT" || len(fields) < 2 {
			continue
		}
		var ev nostr.Event
		if err := json.Unmarshal(fields[1], &ev); err != nil {
			w.t.Fatalf("EVENT frame: %v", err)
		}
		if ev.ID == stop {
			return got
		}
		got = append(got, ev.ID)
	}
}

// sameOrder fails unless got lists exactly want, in want's order.
func sameOrder(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == len(want) {
		same := true
		for i := range got {
			same = same && got[i] == want[i]
		}
		if same {
			return
		}
	}
	pos := make(map[string]int, len(want))
	for i, id := range want {
		pos[id] = i
	}
	var shown []string
	for _, id := range got[:min(len(got), 12)] {
		if i, ok := pos[id]; ok {
			shown = append(shown, fmt.Sprint(i))
		} else {
			shown = append(shown, id[:8]+"?")
		}
	}
	t.Errorf("%s: got %d events, want %d in publish order; got positions %v…", what, len(got), len(want), shown)
}

// TestBlipReplaysEventDatedBeforeLastNotification: instance A loses the
// database while B stores an event dated an hour back (as --max-age
// allows). A replayed by created_at from shortly before the last
// notification it had seen, so the event was stored but never reached A's
// live subscriber. It must arrive once, before what B stored after it.
func TestBlipReplaysEventDatedBeforeLastNotification(t *testing.T) {
	c := newCluster(t)
	proxy, viaProxy := newPGProxy(t, c.db)
	a := c.startOn(viaProxy, 1)[0]
	b := c.start(1)[0]
	k := c.owner
	sub := rawLive(t, a.url, k, nostr.Filter{Kinds: []int{1}, Authors: []string{k.pk}})
	cb := login(t, b.url, k)

	first := signed(t, k, 1, "before the blip")
	mustPublish(t, cb, first)
	stop := signed(t, k, 1, "A has heard of the first")
	mustPublish(t, cb, stop)
	sameOrder(t, "before the blip", sub.until(stop.ID), []string{first.ID})

	proxy.cut()
	old := signedAt(t, k, 1, nostr.Now()-3600, "dated an hour back, stored during the blip")
	mustPublish(t, cb, old)
	proxy.restore()
	stop = signed(t, k, 1, "sentinel after the blip")
	mustPublish(t, cb, stop)
	sameOrder(t, "across the blip", sub.until(stop.ID), []string{old.ID})

	// Nothing comes twice: the next event follows at once.
	last := signed(t, k, 1, "after the sentinel")
	mustPublish(t, cb, last)
	sameOrder(t, "after the blip", sub.until(last.ID), nil)
}

// TestFanoutKeepsPublishOrderAcrossBlip publishes on B from one
// connection, each event after the last was acknowledged, before, during
// and after a database blip of instance A: A's live subscriber must get
// every event once, in publish order. The replay used to sort by
// created_at and then id, so events of one second came in id order.
func TestFanoutKeepsPublishOrderAcrossBlip(t *testing.T) {
	orderAcross(t, "the blip", (*pgProxy).cut, 100, 100, 100)
}

// orderAcross publishes on instance B from one connection, each event
// after the last was acknowledged: before events, then during more while
// cut holds on instance A's database proxy, then after more once it is
// restored. A's live subscriber must get every event once, in publish
// order, each stretch before the sentinel that follows it.
func orderAcross(t *testing.T, what string, cut func(*pgProxy), before, during, after int) {
	t.Helper()
	c := newCluster(t)
	proxy, viaProxy := newPGProxy(t, c.db)
	a := c.startOn(viaProxy, 1)[0]
	b := c.start(1)[0]
	k := c.owner
	sub := rawLive(t, a.url, k, nostr.Filter{Kinds: []int{1}, Authors: []string{k.pk}})
	cb := login(t, b.url, k)
	publish := func(n int, label string) []string {
		var ids []string
		for i := range n {
			ev := signed(t, k, 1, fmt.Sprintf("%s %d", label, i))
			mustPublish(t, cb, ev)
			ids = append(ids, ev.ID)
		}
		return ids
	}

	want := publish(before, "before")
	stop := signed(t, k, 1, "sentinel before "+what)
	mustPublish(t, cb, stop)
	sameOrder(t, "before "+what, sub.until(stop.ID), want)

	cut(proxy)
	want = publish(during, "during")
	proxy.restore()
	want = append(want, publish(after, "after")...)
	stop = signed(t, k, 1, "sentinel after "+what)
	mustPublish(t, cb, stop)
	sameOrder(t, "across "+what, sub.until(stop.ID), want)
}

// TestMarkFallsBackToXmin: a snapshot too long for a notification goes
// as "xmin:xmin:", which sees only what committed before its xmin, so a
// replay from it reads more, never less.
func TestMarkFallsBackToXmin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	db := startPostgres(t)
	owner := newKey(t)
	r := startRelay(t, Config{DB: db, Owner: owner.pk})
	// Marks of a name of its own, apart from the relay's periodic ones.
	f := &fanout{pg: r.fan.pg, name: "buzz-relay-marktest"}
	l := pq.NewListener(db, fanoutMinReconnect, fanoutMaxReconnect, nil)
	defer l.Close()
	if err := l.Listen(notifyChannel); err != nil {
		t.Fatal(err)
	}
	// A transaction left open holds the snapshot's xmin down and puts
	// itself in its xip list.
	conn, err := f.pg.DB.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var open string
	if err := conn.QueryRowContext(t.Context(), `BEGIN; SELECT pg_current_xact_id()::text`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	// One committed after it moves the snapshot's xmax past it.
	if _, err := f.pg.DB.ExecContext(t.Context(), `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	head := "m " + f.name + " "
	for _, limit := range []int{maxNotifyPayload, len(head) + len(open) + 1} {
		if err := f.sendMark(t.Context(), limit); err != nil {
			t.Fatal(err)
		}
		var got note
		for got.origin != f.name {
			select {
			case n := <-l.Notify:
				if n != nil {
					got, _ = parseNote(n.Extra)
				}
			case <-testCtx(t).Done():
				t.Fatal("no mark")
			}
		}
		parts := strings.Split(got.snapshot, ":")
		xmin := parts[0]
		full := limit == maxNotifyPayload
		if full && !slices.Contains(strings.Split(parts[2], ","), open) || !full && got.snapshot != xmin+":"+xmin+":" {
			t.Errorf("mark within %d bytes = %q (open transaction %s); want the full snapshot, or xmin:xmin: when it does not fit", limit, got.snapshot, open)
		}
		if x, _ := strconv.ParseUint(xmin, 10, 64); x > mustUint(t, open) {
			t.Errorf("mark %q has an xmin past the open transaction %s", got.snapshot, open)
		}
	}
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFetchFailureLosesNothing cuts instance A's pool off the database
// but leaves its listening connection: A hears of B's events and cannot
// fetch them. They were dropped with an error in the log. A must hold
// delivery until a replay succeeds, then deliver every event once, in
// publish order, before what follows.
func TestFetchFailureLosesNothing(t *testing.T) {
	orderAcross(t, "the cut pool", (*pgProxy).cutPool, 20, 50, 50)
}

// TestFanoutKeepsPipelinedOrder sends 200 events on one connection to B
// without waiting for any OK: A's live subscriber must get them in the
// order they were sent, each once.
func TestFanoutKeepsPipelinedOrder(t *testing.T) {
	c := newCluster(t)
	ins := c.start(2)
	a, b := ins[0], ins[1]
	k := c.owner
	sub := rawLive(t, a.url, k, nostr.Filter{Kinds: []int{1}, Authors: []string{k.pk}})
	pub := dialWS(t, b.url, nil)
	if ok, reason := pub.auth(k, b.url); !ok {
		t.Fatalf("AUTH on B: %s", reason)
	}
	var want []string
	for i := range 200 {
		ev := signed(t, k, 1, fmt.Sprintf("pipelined %d", i))
		pub.send("EVENT", ev)
		want = append(want, ev.ID)
	}
	stop := signed(t, k, 1, "sentinel")
	pub.send("EVENT", stop)
	if ok, reason := pub.ok(stop.ID); !ok {
		t.Fatalf("sentinel refused: %s", reason)
	}
	sameOrder(t, "pipelined", sub.until(stop.ID), want)
}
