package relay

import (
	"fmt"
	"net/url"

	"github.com/fiatjaf/eventstore"
	"github.com/fiatjaf/eventstore/postgresql"
)

// openPostgres opens eventstore's PostgreSQL backend (lib/pq, pure Go) for
// deployments that outgrow one machine's badger store. The schema is made
// on first use. The URL is never logged: it may hold a password.
func openPostgres(dsn string) (eventstore.Store, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("buzz-relay: --db: want a postgres:// URL")
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
		return nil, fmt.Errorf("buzz-relay: open PostgreSQL store %s@%s: %w", u.Path, u.Host, err)
	}
	return s, nil
}
