package relay

import (
	"database/sql"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"buzzbox/internal/workspace"

	"github.com/fiatjaf/eventstore/postgresql"
	"github.com/nbd-wtf/go-nostr"
)

// startPostgres runs a throwaway PostgreSQL server on a unix socket and
// returns its URL, or skips loudly when the server binaries are missing.
func startPostgres(t testing.TB) string {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	bin := ""
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(b, "initdb")); err == nil {
			bin = b
		}
	}
	if bin == "" {
		t.Skip("SKIP(loud): no PostgreSQL server found under /usr/lib/postgresql/*/bin; apt-get install -y postgresql to test --db")
	}
	// PostgreSQL refuses to run as root; run it as the postgres user then.
	var wrap []string
	dir, err := os.MkdirTemp("", "buzz-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("SKIP(loud): running as root and no postgres user to run the server as; apt-get install -y postgresql")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		wrap = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(name string, args ...string) {
		t.Helper()
		argv := append(append(wrap, filepath.Join(bin, name)), args...)
		cmd := exec.CommandContext(testCtx(t), argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	data := filepath.Join(dir, "data")
	run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync")
	// pg_ctl -w waits until the server accepts connections.
	run("pg_ctl", "-D", data, "-w", "-l", filepath.Join(dir, "log"), "-o", "-k "+dir+" -c listen_addresses= -c fsync=off", "start")
	t.Cleanup(func() {
		argv := append(append(wrap, filepath.Join(bin, "pg_ctl")), "-D", data, "-m", "immediate", "stop")
		exec.Command(argv[0], argv[1:]...).Run()
	})
	return "postgres://postgres@/postgres?host=" + dir + "&sslmode=disable"
}

func TestPostgresStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	db := startPostgres(t)
	owner := newKey(t)
	dir := t.TempDir()
	r := startRelay(t, Config{DataDir: dir, DB: db, Owner: owner.pk})
	c := login(t, r.URL(), owner)
	ev := signed(t, owner, 1, "in postgres")
	mustPublish(t, c, ev)
	p1 := signed(t, owner, 0, `{"name":"a"}`)
	p1.CreatedAt -= 5
	p1.Sign(owner.sk)
	mustPublish(t, c, p1)
	p2 := signed(t, owner, 0, `{"name":"b"}`)
	mustPublish(t, c, p2)
	mustPublish(t, c, signed(t, owner, workspace.KindCreateGroup, "", nostr.Tag{"h", chanA}, nostr.Tag{"name", "pg"}))
	r.Close()

	r2 := startRelay(t, Config{DataDir: dir, DB: db, Owner: owner.pk})
	c2 := login(t, r2.URL(), owner)
	if evs, _ := query(t, c2, nostr.Filter{IDs: []string{ev.ID}}); len(evs) != 1 {
		t.Errorf("event not kept in PostgreSQL across restart")
	}
	if evs, _ := query(t, c2, nostr.Filter{Kinds: []int{0}, Authors: []string{owner.pk}}); len(evs) != 1 || evs[0].ID != p2.ID {
		t.Errorf("kind 0 in PostgreSQL = %s; want only the newer", ids(evs))
	}
	if r2.Members(chanA)[owner.pk] != roleOwner {
		t.Errorf("channel state not rebuilt from PostgreSQL: %v", r2.Members(chanA))
	}
}

// TestSchemaUpgradeOnExistingDatabase: a database made before the replay
// columns (eventstore's table with rows in it) gets them when two
// instances start on it at the same moment; the old rows stay readable
// and are never replayed, new rows carry their transaction and instance.
func TestSchemaUpgradeOnExistingDatabase(t *testing.T) {
	c := newCluster(t)
	old := &postgresql.PostgresBackend{DatabaseURL: c.db}
	if err := old.Init(); err != nil {
		t.Fatal(err)
	}
	before := signed(t, c.owner, 1, "stored before the upgrade")
	if err := old.SaveEvent(t.Context(), &before); err != nil {
		t.Fatal(err)
	}
	old.Close()

	ins := c.start(2)
	cl := login(t, ins[1].url, c.owner)
	if evs, _ := query(t, cl, nostr.Filter{IDs: []string{before.ID}}); len(evs) != 1 {
		t.Errorf("the row stored before the upgrade is not served")
	}
	sub := rawLive(t, ins[0].url, c.owner, nostr.Filter{Kinds: []int{1}, Authors: []string{c.owner.pk}})
	after := signed(t, c.owner, 1, "stored after the upgrade")
	mustPublish(t, cl, after)
	stop := signed(t, c.owner, 1, "sentinel")
	mustPublish(t, cl, stop)
	sameOrder(t, "after the upgrade", sub.until(stop.ID), []string{after.ID})

	db, err := sql.Open("postgres", c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		id     string
		oldRow bool
		what   string
	}{{before.ID, true, "row from before"}, {after.ID, false, "new row"}} {
		var xid, origin sql.NullString
		if err := db.QueryRow(`SELECT buzz_xid::text, buzz_origin FROM event WHERE id = $1`, tc.id).Scan(&xid, &origin); err != nil {
			t.Fatal(err)
		}
		if tc.oldRow == (xid.Valid || origin.Valid) || !tc.oldRow && !strings.HasPrefix(origin.String, "buzz-relay-") {
			t.Errorf("%s: buzz_xid %v, buzz_origin %v", tc.what, xid, origin)
		}
	}
}
