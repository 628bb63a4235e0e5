package relay

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	"github.com/fiatjaf/eventstore/postgresql"
)

// openPostgres opens eventstore's PostgreSQL backend (lib/pq, pure Go) for
// deployments that outgrow one machine's badger store. The schema is made
// on first use, under an advisory lock so that instances started at the
// same moment on one fresh database do not race each other's CREATEs. The
// URL is never logged: it may hold a password.
//
// Every connection of the instance carries application_name = app, which
// the notify trigger (fanout.go) puts into each notification so that an
// instance can tell its own writes from the others'. The database also
// remembers the relay's public key: an instance signing with another key
// is refused, since its clients would see another relay.
func openPostgres(dsn, app, pubkey string) (*postgresql.PostgresBackend, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("buzz-relay: --db: want a postgres:// URL")
	}
	where := u.Path + "@" + u.Host
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	dsn = u.String()

	ctx, cancel := context.WithTimeout(context.Background(), schemaLockWait)
	defer cancel()
	lockDB, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s: %w", where, err)
	}
	defer lockDB.Close()
	conn, err := lockDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s: %w", where, err)
	}
	defer conn.Close()
	// A session lock: it holds while this connection lives, and every
	// other instance waits for it in its own pg_advisory_lock.
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, schemaLockKey); err != nil {
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s: take the schema lock: %w", where, err)
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, schemaLockKey)
	var version int
	if err := conn.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s: read the server version: %w", where, err)
	}
	if version < minPostgresVersion {
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s: the server is PostgreSQL %d.%d; --db needs %d or later (xid8 and pg_current_snapshot, which the fan-out's replay uses)",
			where, version/10000, version%10000, minPostgresVersion/10000)
	}

	s := &postgresql.PostgresBackend{
		DatabaseURL:       dsn,
		QueryLimit:        maxQueryLimit,
		QueryIDsLimit:     maxQueryLimit,
		QueryAuthorsLimit: maxQueryLimit,
		QueryKindsLimit:   maxQueryKinds,
		QueryTagsLimit:    maxQueryKinds,
	}
	if err := s.Init(); err != nil {
		if s.DB != nil {
			s.Close()
		}
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s: %w", where, err)
	}
	if _, err := conn.ExecContext(ctx, sharedSchema+searchSchema()); err != nil {
		s.Close()
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s: create the fan-out schema: %w", where, err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO buzz_relay (one, pubkey) VALUES (true, $1) ON CONFLICT DO NOTHING`, pubkey); err != nil {
		s.Close()
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s: record the relay key: %w", where, err)
	}
	var have string
	if err := conn.QueryRowContext(ctx, `SELECT pubkey FROM buzz_relay`).Scan(&have); err != nil {
		s.Close()
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s: read the relay key: %w", where, err)
	}
	if have != pubkey {
		s.Close()
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s: the database belongs to the relay key %s, this instance signs with %s; give every instance on one database the same --relay-key-file", where, have, pubkey)
	}
	return s, nil
}

// minPostgresVersion is the oldest server --db works with, as
// server_version_num: 13 brought xid8, pg_current_xact_id and
// pg_current_snapshot.
const minPostgresVersion = 130000

// schemaLockKey is the pg_advisory_lock key the schema work runs under
// ("buzz" in ASCII); any constant works as long as every instance uses it.
const schemaLockKey = 0x62757a7a

// sharedSchema is what several instances on one database share besides
// eventstore's event table:
//
//   - buzz_notify_event, a trigger on every insert into event, sends the
//     id on notifyChannel within the inserting transaction, so a
//     notification is sent exactly when the event is committed (never for
//     a write that rolled back, never lost to a crash between the two);
//   - buzz_xid and buzz_origin, two columns added to eventstore's event
//     table (its queries name their columns, so it never sees them), hold
//     the inserting transaction and instance of each row, which the
//     replay after a database blip follows (fanout.go). Rows from before
//     the columns came have neither and are never replayed;
//   - buzz_invite_spent makes invite redemption atomic across instances;
//   - buzz_login holds the owner's sign-in links (login.go): the token's
//     hash, the key sealed under the token, and when it was minted,
//     expires and was spent;
//   - buzz_nip98_seen holds the NIP-98 token ids used lately, so that a
//     token spent on one instance is a replay on every other;
//   - buzz_relay holds the relay's public key (one row).
//
// Payload of a stored event: "s <application_name> <created_at> <id>".
const sharedSchema = `
CREATE OR REPLACE FUNCTION buzz_notify_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('` + notifyChannel + `', 's ' || current_setting('application_name') || ' ' || NEW.created_at || ' ' || NEW.id);
  RETURN NULL;
END $$;
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'event'::regclass AND attname = 'buzz_xid' AND NOT attisdropped) THEN
    -- Added without a default, then given one: existing rows keep NULL
    -- and the table is not rewritten.
    ALTER TABLE event ADD COLUMN buzz_xid xid8, ADD COLUMN buzz_origin text;
    ALTER TABLE event ALTER COLUMN buzz_xid SET DEFAULT pg_current_xact_id(),
      ALTER COLUMN buzz_origin SET DEFAULT current_setting('application_name');
    CREATE INDEX buzz_xid_idx ON event (buzz_xid);
  END IF;
END $$;
DROP TRIGGER IF EXISTS buzz_notify_event ON event;
CREATE TRIGGER buzz_notify_event AFTER INSERT ON event FOR EACH ROW EXECUTE FUNCTION buzz_notify_event();
CREATE TABLE IF NOT EXISTS buzz_invite_spent (
  token_hash text PRIMARY KEY,
  pubkey text NOT NULL,
  spent_at bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS buzz_nip98_seen (
  id text PRIMARY KEY,
  at bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS buzz_login (
  token_hash text PRIMARY KEY,
  sealed bytea,
  minted_ns bigint NOT NULL,
  expires_ns bigint NOT NULL,
  spent_ns bigint
);
CREATE TABLE IF NOT EXISTS buzz_workflow_run (
  run text PRIMARY KEY,
  claimed_at bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS buzz_relay (
  one boolean PRIMARY KEY CHECK (one),
  pubkey text NOT NULL
);
`

// errInviteSpent is claimInvite's answer for a token another redemption
// took first, on any instance.
var errInviteSpent = errors.New("invite already used")
