package relay

import (
	"buzzbox/internal/workspace"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

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
