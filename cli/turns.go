package cli

import (
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// runTurnStop asks the harness handling a message to stop its turn: a
// signed stop request (workspace.KindTurnStop) in the message's channel.
// The harness obeys the agent's owner and the channel's admins and
// ignores anyone else; the turn's card says who stopped it.
func runTurnStop(in *inv) error {
	id, err := needEvent(in)
	if err != nil {
		return err
	}
	target, err := fetchTarget(in, id)
	if err != nil {
		return err
	}
	h := channelTag(target)
	if len(h) == 0 {
		return userErr("event %s is in no channel; only a channel message's turn can be stopped", id)
	}
	ev := &nostr.Event{Kind: workspace.KindTurnStop, Tags: append(h, nostr.Tag{"e", id})}
	return publishAndPrint(in, ev)
}
