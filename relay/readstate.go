package relay

import (
	"encoding/json"
	"fmt"

	"buzzbox/internal/workspace"
	"github.com/nbd-wtf/go-nostr"
)

// Read markers and unread counts. A person's read marker for a channel is
// their own NIP-78 event (workspace.KindAppData, d = ReadMarkerPrefix +
// channel), so every device they sign in on agrees; the relay serves that
// kind only to its author (ownOnly), since a marker says who read what
// and when. The web client counts what is unread with a NIP-45 COUNT
// since the marker, with the extensions below.

// maxExcludedAuthors bounds a COUNT's exclude_authors: a client leaves
// out its own key (and perhaps a few more), not a directory.
const maxExcludedAuthors = 20

// countExt is the relay's extension of a COUNT filter:
//
//	"top_level": true        leave out thread replies (an e tag marked
//	                         root or reply, NIP-10), which a channel shows
//	                         in their thread, not in the channel
//	"exclude_authors": [pk]  leave out these authors' events (hex)
type countExt struct {
	TopLevel       bool     `json:"top_level"`
	ExcludeAuthors []string `json:"exclude_authors"`
}

// parseCountExt reads the extension from a raw COUNT message
// ["COUNT", id, filter]; a message without one gives a zero countExt.
func parseCountExt(msg []byte) (countExt, error) {
	var parts []json.RawMessage
	var ext countExt
	if err := json.Unmarshal(msg, &parts); err != nil || len(parts) < 3 {
		return ext, nil // the envelope parser already judged the message
	}
	if err := json.Unmarshal(parts[2], &ext); err != nil {
		return countExt{}, fmt.Errorf("invalid: COUNT extension: %w", err)
	}
	if len(ext.ExcludeAuthors) > maxExcludedAuthors {
		return countExt{}, fmt.Errorf("invalid: exclude_authors names more than %d keys", maxExcludedAuthors)
	}
	return ext, nil
}

// zero reports whether e asks for nothing beyond NIP-45.
func (e countExt) zero() bool { return !e.TopLevel && len(e.ExcludeAuthors) == 0 }

// keep reports whether ev is counted under e.
func (e countExt) keep(ev *nostr.Event) bool {
	for _, pk := range e.ExcludeAuthors {
		if ev.PubKey == pk {
			return false
		}
	}
	if e.TopLevel {
		for _, t := range ev.Tags {
			if len(t) >= 4 && t[0] == "e" && (t[3] == "root" || t[3] == "reply") {
				return false
			}
		}
	}
	return true
}

// ownOnly reports whether events of kind k are served only to their
// author.
func ownOnly(k int) bool { return k == workspace.KindAppData }

// mayMatchOwnOnly reports whether f can match an author-only kind.
func mayMatchOwnOnly(f nostr.Filter) bool {
	if len(f.Kinds) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if ownOnly(k) {
			return true
		}
	}
	return false
}

// namesOwnOnly reports whether f asks for an author-only kind by name,
// which needs an authenticated caller to mean anything.
func namesOwnOnly(f nostr.Filter) bool {
	for _, k := range f.Kinds {
		if ownOnly(k) {
			return true
		}
	}
	return false
}
