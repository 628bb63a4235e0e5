package relay

import (
	"context"
	"errors"
	"net/http"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
)

type channels struct{}

func newChannels() *channels                                                    { return &channels{} }
func (r *Relay) loadChannels() error                                            { return nil }
func (r *Relay) checkChannelWrite(context.Context, caller, *nostr.Event) string { return "" }
func (r *Relay) channelReadable(caller, *nostr.Event) bool                      { return true }
func (r *Relay) onEventSaved(context.Context, *nostr.Event)                     {}

type replayCache struct{}

func newReplayCache() *replayCache { return &replayCache{} }

func (r *Relay) serveBridge(w http.ResponseWriter, req *http.Request) { http.NotFound(w, req) }
func (r *Relay) serveGit(w http.ResponseWriter, req *http.Request)    { http.NotFound(w, req) }

func openPostgres(string) (eventstore.Store, error) { return nil, errors.New("not yet") }
