package harness

import (
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// defaultWakeKinds are the kinds that wake the agent unless --kinds says otherwise.
func defaultWakeKinds() []int {
	return []int{workspace.KindStream, workspace.KindApprovalRequest, workspace.KindReminder}
}

// Event is a relay event on its way through the harness.
type Event struct {
	nostr.Event
	Channel  string    // lowercase channel UUID
	Received time.Time // when the harness took it in
	Tag      string    // prompt tag of the rule that accepted it
	Stored   bool      // replayed by the relay (missed while away), not live
	// Woken is why an event that does not mention the agent wakes it
	// (wakeDM, wakeThread); "" none.
	Woken string
}

// mentions reports whether a p tag names hex.
func (e *Event) mentions(hex string) bool {
	for _, t := range e.Tags {
		if len(t) >= 2 && t[0] == "p" && t[1] == hex {
			return true
		}
	}
	return false
}

// addressedElsewhere reports whether e p-tags someone, none of them hex:
// a message addressed to others.
func (e *Event) addressedElsewhere(hex string) bool {
	others := false
	for _, t := range e.Tags {
		if len(t) >= 2 && t[0] == "p" {
			if t[1] == hex {
				return false
			}
			others = true
		}
	}
	return others
}

// thread returns the thread root and direct parent of e under the Buzz
// convention: root and reply markers give both; a lone reply marker is
// both root and parent; otherwise e is top-level and both are empty.
func (e *Event) thread() (root, parent string) {
	for _, t := range e.Tags {
		if len(t) < 4 || t[0] != "e" || !nostrkey.IsLowerHex(t[1], 64) {
			continue
		}
		switch t[3] {
		case "root":
			root = t[1]
		case "reply":
			parent = t[1]
		}
	}
	switch {
	case parent != "" && root != "":
		return root, parent
	case parent != "":
		return parent, parent
	}
	return "", ""
}

// pTags returns valid 64-hex p tag values in order, without duplicates.
func (e *Event) pTags() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range e.Tags {
		if len(t) >= 2 && t[0] == "p" {
			h := strings.ToLower(t[1])
			if nostrkey.IsLowerHex(h, 64) && !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out
}

// channelOf returns the first h tag, lowercased.
func channelOf(ev *nostr.Event) string {
	if t := ev.Tags.Find("h"); len(t) >= 2 {
		return strings.ToLower(t[1])
	}
	return ""
}
