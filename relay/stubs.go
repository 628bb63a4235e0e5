package relay

import (
	"errors"
	"net/http"

	"github.com/fiatjaf/eventstore"
)

type replayCache struct{}

func newReplayCache() *replayCache { return &replayCache{} }

func (r *Relay) serveBridge(w http.ResponseWriter, req *http.Request) { http.NotFound(w, req) }
func (r *Relay) serveGit(w http.ResponseWriter, req *http.Request)    { http.NotFound(w, req) }

func openPostgres(string) (eventstore.Store, error) { return nil, errors.New("not yet") }
