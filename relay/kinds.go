package relay

import (
	"context"

	"github.com/nbd-wtf/go-nostr"
)

// firstUnrangedKind is where NIP-01's ranges end: kinds from here up are
// neither replaceable nor addressable, and the workspace uses them as
// regular events (forum posts 45001/45003, workflow triggers 46020,
// approvals 46030/46031, …). The write pipeline hands every kind go-nostr
// does not call regular to replaceEvent, which must not keep only one
// such event per author and kind.
const firstUnrangedKind = 40000

// replaceEvent stores a non-regular kind: replaceable and addressable kinds
// replace, kinds past NIP-01's ranges are stored like regular events.
func (r *Relay) replaceEvent(ctx context.Context, ev *nostr.Event) error {
	if ev.Kind >= firstUnrangedKind {
		return r.store.SaveEvent(ctx, ev)
	}
	return r.store.ReplaceEvent(ctx, ev)
}
