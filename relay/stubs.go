package relay

import (
	"errors"
	"net/http"

	"github.com/fiatjaf/eventstore"
)

func (r *Relay) serveGit(w http.ResponseWriter, req *http.Request) { http.NotFound(w, req) }

func openPostgres(string) (eventstore.Store, error) { return nil, errors.New("not yet") }
