package relay

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
)

// instance is one buzz-relay process of a multi-instance test.
type instance struct {
	cmd *exec.Cmd
	url string
}

func (in instance) http() string { return "http" + strings.TrimPrefix(in.url, "ws") }

// cluster is a database and the flags every instance on it shares.
type cluster struct {
	t     testing.TB
	exe   string
	db    string
	key   string // --relay-key-file
	owner testKey
	extra []string
}

func newCluster(t testing.TB, extra ...string) *cluster {
	t.Helper()
	// Under -short a test skips; a benchmark takes its short path instead
	// (scripts/test.sh runs every benchmark once with -short).
	if _, bench := t.(*testing.B); testing.Short() && !bench {
		t.Skip("starts PostgreSQL and several relay processes")
	}
	c := &cluster{t: t, exe: testexe.Link(t, "buzz-relay"), db: startPostgres(t), owner: newKey(t), extra: extra}
	c.key = filepath.Join(t.TempDir(), "relay.key")
	if err := os.WriteFile(c.key, []byte(nostr.GeneratePrivateKey()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// start launches n instances at the same moment and waits for each to
// listen.
func (c *cluster) start(n int) []instance {
	c.t.Helper()
	return c.startOn(c.db, n)
}

// startOn is start with the database reached by db, which may be a proxy
// in front of the cluster's database.
func (c *cluster) startOn(db string, n int) []instance {
	c.t.Helper()
	waits := make([]func() (instance, string), n)
	for i := range n {
		args := append([]string{"--db", db, "--relay-key-file", c.key, "--owner", c.owner.pk,
			"--data", c.t.TempDir(), "--rate", "1000000", "--burst", "1000000"}, c.extra...)
		waits[i] = spawnRelay(c.t, c.exe, args...)
	}
	out := make([]instance, n)
	for i, wait := range waits {
		in, log := wait()
		if in.url == "" {
			c.t.Fatalf("instance %d of %d did not start:\n%s", i+1, n, log)
		}
		out[i] = in
	}
	return out
}

// spawnRelay starts buzz-relay with args and returns a wait for its URL;
// the wait gives the empty URL and its stderr when it exits first.
func spawnRelay(t testing.TB, exe string, args ...string) func() (instance, string) {
	t.Helper()
	cmd := exec.Command(exe, append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	urls := make(chan string, 1)
	var mu sync.Mutex
	var log strings.Builder
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			t.Logf("%s %s stderr:\n%s", filepath.Base(exe), strings.Join(args, " "), log.String())
			mu.Unlock()
		}
	})
	// Reads stderr until the process exits and closes it.
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			if log.Len() < 1<<20 {
				log.WriteString(line + "\n")
			}
			mu.Unlock()
			if !sent && strings.Contains(line, "msg=listening") {
				for _, f := range strings.Fields(line) {
					if u, ok := strings.CutPrefix(f, "url="); ok {
						urls <- u
						sent = true
					}
				}
			}
		}
		io.Copy(io.Discard, stderr)
		close(urls)
	}()
	return func() (instance, string) {
		select {
		case u := <-urls:
			mu.Lock()
			defer mu.Unlock()
			return instance{cmd, u}, log.String()
		case <-time.After(60 * time.Second):
			t.Fatal("buzz-relay did not report its address")
		}
		return instance{}, ""
	}
}

// collect gathers the events of sub until the one with id stop arrives.
func collect(t *testing.T, sub *nostr.Subscription, stop string) map[string]int {
	t.Helper()
	got := make(map[string]int)
	ctx := testCtx(t)
	for {
		select {
		case ev := <-sub.Events:
			if ev.ID == stop {
				return got
			}
			got[ev.ID]++
		case reason := <-sub.ClosedReason:
			t.Fatalf("subscription closed: %s", reason)
		case <-ctx.Done():
			t.Fatalf("sentinel %s never arrived; %d events before the deadline", stop[:8], len(got))
		}
	}
}

// waitAll goes on counting sub's events into got until every id of want
// has come, or the test's deadline passes (the caller reports what is
// missing).
func waitAll(t *testing.T, sub *nostr.Subscription, got map[string]int, want []string) {
	t.Helper()
	ctx := testCtx(t)
	missing := func() bool {
		for _, id := range want {
			if got[id] == 0 {
				return true
			}
		}
		return false
	}
	for missing() {
		select {
		case ev := <-sub.Events:
			got[ev.ID]++
		case <-ctx.Done():
			return
		}
	}
}

// live subscribes to f and waits for EOSE, so that what follows is live.
func live(t testing.TB, c *nostr.Relay, f nostr.Filter) *nostr.Subscription {
	t.Helper()
	sub, err := c.Subscribe(t.Context(), nostr.Filters{f}) // lives as long as the test
	if err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case <-sub.Events: // stored; only what comes after EOSE counts
		case <-sub.EndOfStoredEvents:
			return sub
		case reason := <-sub.ClosedReason:
			t.Fatalf("REQ closed: %s", reason)
		case <-testCtx(t).Done():
			t.Fatal("no EOSE")
		}
	}
}

func TestConcurrentStartsOnFreshDatabase(t *testing.T) {
	c := newCluster(t, "--open")
	ins := c.start(4)
	cl := connect(t, ins[3].url)
	mustPublish(t, cl, signed(t, c.owner, 1, "all four came up"))
}

// TestFanoutAcrossInstances publishes 100 events on each of two instances
// and checks that a live subscriber of the other gets every one, once,
// and an ephemeral event too, in the order they were published.
func TestFanoutAcrossInstances(t *testing.T) {
	c := newCluster(t)
	ins := c.start(2)
	k := c.owner
	for dir, pair := range [][2]instance{{ins[1], ins[0]}, {ins[0], ins[1]}} {
		pub := login(t, pair[0].url, k)
		sub := rawLive(t, pair[1].url, k, nostr.Filter{Kinds: []int{1, 20001}, Authors: []string{k.pk}})
		var want []string
		for i := range 100 {
			ev := signed(t, k, 1, fmt.Sprintf("direction %d event %d", dir, i))
			mustPublish(t, pub, ev)
			want = append(want, ev.ID)
		}
		eph := signed(t, k, 20001, "typing")
		mustPublish(t, pub, eph)
		want = append(want, eph.ID)
		stop := signed(t, k, 1, fmt.Sprintf("direction %d sentinel", dir))
		mustPublish(t, pub, stop)
		sameOrder(t, fmt.Sprintf("direction %d", dir), sub.until(stop.ID), want)
	}
}

// TestAttackPrivateChannelAcrossInstances: a relay member who is not in a
// private channel subscribes on instance B to every kind 1; a message of
// the channel published on A must reach the channel's member on B and not
// the outsider.
func TestAttackPrivateChannelAcrossInstances(t *testing.T) {
	member, outsider := newKey(t), newKey(t)
	c := newCluster(t, "--allow", member.pk, "--allow", outsider.pk)
	ins := c.start(2)
	a, b := ins[0], ins[1]
	const id = "6f1b8c2e-3a4d-4e5f-8a9b-0c1d2e3f4a5b"

	ownerB := login(t, b.url, c.owner)
	state := live(t, ownerB, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"d": {id}}})
	ownerA := login(t, a.url, c.owner)
	mustPublish(t, ownerA, signed(t, c.owner, workspace.KindCreateGroup, "", nostr.Tag{"h", id}, nostr.Tag{"name", "secret"}, nostr.Tag{"private"}))
	mustPublish(t, ownerA, signed(t, c.owner, workspace.KindAddUser, "", nostr.Tag{"h", id}, nostr.Tag{"p", member.pk}))
	// B has applied the member list once its 39002 naming member reaches B.
	for done := false; !done; {
		select {
		case ev := <-state.Events:
			done = ev.Tags.FindWithValue("p", member.pk) != nil
		case <-testCtx(t).Done():
			t.Fatal("instance B never saw the channel's member list")
		}
	}

	outB := login(t, b.url, outsider)
	// Raw frames: the relay writes in commit order, so the secret, had it
	// been sent, would come before the sentinel published after it.
	outSub := rawLive(t, b.url, outsider, nostr.Filter{Kinds: []int{1}})
	if _, reason := query(t, outB, nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"h": {id}}}); !strings.Contains(reason, "restricted") {
		t.Errorf("outsider's #h REQ on B = %q; want restricted (B does not know the channel is private)", reason)
	}
	memB := login(t, b.url, member)
	memSub := live(t, memB, nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"h": {id}}})

	memA := login(t, a.url, member)
	secret := signed(t, member, 1, "for the channel only", nostr.Tag{"h", id})
	mustPublish(t, memA, secret)
	stop := signed(t, c.owner, 1, "public sentinel")
	mustPublish(t, ownerA, stop)

	if slices.Contains(outSub.until(stop.ID), secret.ID) {
		t.Errorf("outsider on B received the private channel's message published on A")
	}
	select {
	case ev := <-memSub.Events:
		if ev.ID != secret.ID {
			t.Errorf("member on B got %s; want the channel message", ev.ID[:8])
		}
	case <-testCtx(t).Done():
		t.Error("channel member on B never got the message published on A")
	}
}

// TestAttackBanOnOneInstanceCutsOther bans a key through instance A's
// NIP-86 API while it is connected to instance B: B must close it.
func TestAttackBanOnOneInstanceCutsOther(t *testing.T) {
	victim := newKey(t)
	c := newCluster(t, "--allow", victim.pk)
	ins := c.start(2)
	a, b := ins[0], ins[1]
	vb := login(t, b.url, victim)
	mustPublish(t, vb, signed(t, victim, 1, "before the ban"))
	mustManage(t, a.http(), c.owner, methodBan, victim.pk, "spam")
	select {
	case <-vb.Context().Done():
	case <-testCtx(t).Done():
		t.Fatal("instance B kept the banned key's connection open")
	}
	if msg := publishAs(t, b.url, victim); !strings.Contains(msg, "banned") {
		t.Errorf("banned key publishing on B = %q; want blocked: banned", msg)
	}
}

// TestKillInstanceMidBurst publishes through B from 8 connections, kills
// B with SIGKILL part way and checks that A's live subscriber got every
// event B acknowledged, each once.
func TestKillInstanceMidBurst(t *testing.T) {
	const total, killAt, workers = 3000, 1000, 8
	c := newCluster(t)
	ins := c.start(2)
	a, b := ins[0], ins[1]
	k := c.owner
	ca := login(t, a.url, k)
	sub := live(t, ca, nostr.Filter{Kinds: []int{1}, Authors: []string{k.pk}})
	events := make([]nostr.Event, total)
	for i := range events {
		events[i] = signed(t, k, 1, fmt.Sprintf("burst %d", i))
	}
	conns := make([]*nostr.Relay, workers)
	for i := range conns {
		conns[i] = login(t, b.url, k) // a connection each
	}
	acked := burstUntilKill(t, conns, events, killAt, func() { b.cmd.Process.Kill() })
	b.cmd.Wait()
	// The sentinel goes through a third instance, so it reaches A by the
	// same path as B's events, after everything B committed.
	cc := login(t, c.start(1)[0].url, k)
	stop := signed(t, k, 1, "sentinel after the kill")
	mustPublish(t, cc, stop)
	got := collect(t, sub, stop.ID)
	// The relay writes the sentinel after everything B committed, but
	// go-nostr's client hands each event to sub.Events from a goroutine
	// of its own, so the sentinel can come out first. Wait for the rest
	// too, for as long as a test may.
	waitAll(t, sub, got, acked)
	// Events B stored but had not yet acknowledged when killed may come too.
	for id := range got {
		if got[id] > 1 {
			t.Errorf("event %s delivered %d times", id[:8], got[id])
		}
	}
	missing := 0
	for _, id := range acked {
		if got[id] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d events acknowledged by B never reached A's subscriber", missing, len(acked))
	}
	t.Logf("%d acknowledged by B before SIGKILL, %d delivered on A", len(acked), len(got))
}

// TestReplayAfterDatabaseBlip cuts every instance's notification
// connection, publishes on B while they reconnect, and checks that A's
// subscriber gets every event once, in publish order.
func TestReplayAfterDatabaseBlip(t *testing.T) {
	c := newCluster(t)
	ins := c.start(2)
	a, b := ins[0], ins[1]
	k := c.owner
	sub := rawLive(t, a.url, k, nostr.Filter{Kinds: []int{1}, Authors: []string{k.pk}})
	cb := login(t, b.url, k)
	db, err := sql.Open("postgres", c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var cut int
	if err := db.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE 'buzz-relay-%' AND query LIKE 'LISTEN%'`).Scan(&cut); err != nil || cut != 2 {
		t.Fatalf("cut %d listening connections (%v); want 2", cut, err)
	}
	var want []string
	for i := range 300 {
		ev := signed(t, k, 1, fmt.Sprintf("during the blip %d", i))
		mustPublish(t, cb, ev)
		want = append(want, ev.ID)
	}
	stop := signed(t, k, 1, "sentinel after the blip")
	mustPublish(t, cb, stop)
	sameOrder(t, "across the blip", sub.until(stop.ID), want)
}

// TestRelayKeyMismatchRefused starts a second instance with another key
// on the same database: it must refuse, naming --relay-key-file.
func TestRelayKeyMismatchRefused(t *testing.T) {
	c := newCluster(t, "--open")
	c.start(1)
	other := filepath.Join(t.TempDir(), "other.key")
	os.WriteFile(other, []byte(nostr.GeneratePrivateKey()), 0o600)
	out, err := exec.Command(c.exe, "--listen", "127.0.0.1:0", "--db", c.db, "--relay-key-file", other, "--open", "--data", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--relay-key-file") {
		t.Errorf("second key on one database: err %v, output %q; want a refusal naming --relay-key-file", err, out)
	}
}

// TestGitOffWithoutSharedDir: with --db and no --git-dir, /git/ answers
// 503 naming --git-dir instead of splitting repositories per instance.
func TestGitOffWithoutSharedDir(t *testing.T) {
	c := newCluster(t, "--open")
	in := c.start(1)[0]
	resp, err := http.Get(in.http() + "/git/" + c.owner.pk + "/repo.git/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "--git-dir") {
		t.Errorf("git with --db and no --git-dir = %d %q; want 503 naming --git-dir", resp.StatusCode, b)
	}
}

// TestAttackInviteRedeemedTwiceAcrossInstances creates an invite on A and
// has two new keys redeem it at the same moment, one through each
// instance: exactly one may win.
func TestAttackInviteRedeemedTwiceAcrossInstances(t *testing.T) {
	c := newCluster(t)
	ins := c.start(2)
	for round := range 5 {
		token, _, _ := createInvite(t, ins[0].http(), c.owner)
		body, _ := json.Marshal(map[string]string{"token": token})
		var reqs []*http.Request
		for _, in := range ins {
			sec, err := nostrkey.ParseSecret(newKey(t).sk)
			if err != nil {
				t.Fatal(err)
			}
			u := in.http() + invitePath
			hdr, err := nip98.Header(sec, u, http.MethodPost, nip98.Options{Body: body})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, u, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", hdr)
			reqs = append(reqs, req)
		}
		statuses := make([]int, len(reqs))
		var wg sync.WaitGroup
		for i, req := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if resp, err := http.DefaultClient.Do(req); err == nil {
					statuses[i] = resp.StatusCode
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
		won := 0
		for _, s := range statuses {
			if s == http.StatusOK {
				won++
			} else if s != http.StatusGone {
				t.Errorf("round %d: a redemption got %d; want 200 or 410", round, s)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: one invite redeemed %d times across two instances (statuses %v); want once", round, won, statuses)
		}
	}
}

// TestAttackNIP98ReplayAcrossInstances spends a NIP-98 token on A's
// management API and sends the same request to B: B must refuse it.
func TestAttackNIP98ReplayAcrossInstances(t *testing.T) {
	c := newCluster(t, "--public-url", "ws://relay.test")
	ins := c.start(2)
	body, _ := json.Marshal(map[string]any{"method": "listbannedpubkeys", "params": []any{}})
	sec, err := nostrkey.ParseSecret(c.owner.sk)
	if err != nil {
		t.Fatal(err)
	}
	// Both instances answer to the balancer's one public name.
	hdr, err := nip98.Header(sec, "http://relay.test/", http.MethodPost, nip98.Options{Body: body})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []int
	for _, in := range ins {
		req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, in.http()+"/", bytes.NewReader(body))
		req.Host = "relay.test"
		req.Header.Set("Content-Type", contentTypeRPC)
		req.Header.Set("Authorization", hdr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	if statuses[0] != http.StatusOK || statuses[1] != http.StatusUnauthorized {
		t.Errorf("one NIP-98 token on A then on B = %v; want [200 401]", statuses)
	}
}

// TestConcurrentAddsOnTwoInstances adds one member through A and another
// through B at the same moment: the channel's member list must end with
// both, on both instances.
func TestConcurrentAddsOnTwoInstances(t *testing.T) {
	c := newCluster(t)
	ins := c.start(2)
	owners := []*nostr.Relay{login(t, ins[0].url, c.owner), login(t, ins[1].url, c.owner)}
	for round := range 5 {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", round)
		mustPublish(t, owners[0], signed(t, c.owner, workspace.KindCreateGroup, "", nostr.Tag{"h", id}, nostr.Tag{"name", "race"}))
		// No wait for B to hear of the channel: a command B would refuse
		// is judged again on the state in the store.
		adds := []testKey{newKey(t), newKey(t)}
		cmds := make([]nostr.Event, 2)
		for i, k := range adds {
			cmds[i] = signed(t, c.owner, workspace.KindAddUser, "", nostr.Tag{"h", id}, nostr.Tag{"p", k.pk})
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = owners[i].Publish(testCtx(t), cmds[i])
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("round %d: add: %v", round, err)
			}
		}
		evs, _ := query(t, owners[0], nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"d": {id}}})
		if len(evs) != 1 {
			t.Fatalf("round %d: %d member lists; want 1", round, len(evs))
		}
		for _, k := range adds {
			if evs[0].Tags.FindWithValue("p", k.pk) == nil {
				t.Errorf("round %d: member list %v lacks a key added concurrently", round, evs[0].Tags)
			}
		}
	}
}

// redeemAs redeems invite token at base as a new key and returns the
// HTTP status.
func redeemAs(t *testing.T, base, token string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"token": token})
	sec, err := nostrkey.ParseSecret(newKey(t).sk)
	if err != nil {
		t.Fatal(err)
	}
	u := base + invitePath
	hdr, err := nip98.Header(sec, u, http.MethodPost, nip98.Options{Body: body})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", hdr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestInviteMadeOnOneInstanceWorksOnOther: an invite created through A is
// redeemed through B at once (B has not been told of it yet), and is then
// spent on both.
func TestInviteMadeOnOneInstanceWorksOnOther(t *testing.T) {
	c := newCluster(t)
	ins := c.start(2)
	token, _, _ := createInvite(t, ins[0].http(), c.owner)
	if status := redeemAs(t, ins[1].http(), token); status != http.StatusOK {
		t.Fatalf("invite made on A, redeemed on B = %d; want 200", status)
	}
	for i, in := range ins {
		if status := redeemAs(t, in.http(), token); status != http.StatusGone {
			t.Errorf("spent invite redeemed again on instance %d = %d; want 410", i, status)
		}
	}
}
