package cli

import (
	"encoding/json"
	"io"
	"sort"
	"strings"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// outEvent is the normalised event printed by read commands.
type outEvent struct {
	ID        string     `json:"id"`
	PubKey    string     `json:"pubkey"`
	Kind      int        `json:"kind"`
	Content   string     `json:"content"`
	CreatedAt int64      `json:"created_at"`
	Tags      nostr.Tags `json:"tags"`
}

// compactEvent is the --format compact shape.
type compactEvent struct {
	ID        string `json:"id"`
	Content   string `json:"content"`
	CreatedAt int64  `json:"created_at"`
}

func normalise(ev *nostr.Event, compact bool) any {
	if compact {
		return compactEvent{ev.ID, ev.Content, int64(ev.CreatedAt)}
	}
	tags := ev.Tags
	if tags == nil {
		tags = nostr.Tags{}
	}
	return outEvent{ev.ID, ev.PubKey, ev.Kind, ev.Content, int64(ev.CreatedAt), tags}
}

func normaliseAll(evs []*nostr.Event, compact bool) []any {
	out := make([]any, 0, len(evs))
	for _, ev := range evs {
		out = append(out, normalise(ev, compact))
	}
	return out
}

// sortAscending orders events oldest first, ties by id.
// sortAscending orders events oldest first. Within one second an event
// follows the events it replies to (its thread position), then ids break
// ties, so a reply never lists before its question.
func sortAscending(evs []*nostr.Event) {
	depth := threadDepths(evs)
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].CreatedAt != evs[j].CreatedAt {
			return evs[i].CreatedAt < evs[j].CreatedAt
		}
		if di, dj := depth[evs[i].ID], depth[evs[j].ID]; di != dj {
			return di < dj
		}
		return evs[i].ID < evs[j].ID
	})
}

// sortDescending orders events newest first, replies before their
// questions within one second (the reverse of sortAscending).
func sortDescending(evs []*nostr.Event) {
	depth := threadDepths(evs)
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].CreatedAt != evs[j].CreatedAt {
			return evs[i].CreatedAt > evs[j].CreatedAt
		}
		if di, dj := depth[evs[i].ID], depth[evs[j].ID]; di != dj {
			return di > dj
		}
		return evs[i].ID < evs[j].ID
	})
}

// threadDepths gives each event the number of its ancestors (by the e
// tag threadRoot reads) found among evs; events outside every thread are
// 0. A chain longer than evs (a cycle of forged tags) stops there.
func threadDepths(evs []*nostr.Event) map[string]int {
	parent := make(map[string]string, len(evs))
	for _, ev := range evs {
		parent[ev.ID] = ""
	}
	for _, ev := range evs {
		if p := replyParent(ev); p != "" {
			if _, ok := parent[p]; ok {
				parent[ev.ID] = p
			}
		}
	}
	depth := make(map[string]int, len(evs))
	for _, ev := range evs {
		d := 0
		for p := parent[ev.ID]; p != "" && d < len(evs); p = parent[p] {
			d++
		}
		depth[ev.ID] = d
	}
	return depth
}

// replyParent is the event ev answers: its reply marker, else its root
// marker, else "" for a top-level event.
func replyParent(ev *nostr.Event) string {
	var root string
	for _, t := range ev.Tags {
		if len(t) < 4 || t[0] != "e" || !nostrkey.IsLowerHex(strings.ToLower(t[1]), 64) {
			continue
		}
		switch t[3] {
		case "reply":
			return strings.ToLower(t[1])
		case "root":
			if root == "" {
				root = strings.ToLower(t[1])
			}
		}
	}
	return root
}

// writeJSON prints one JSON document and a newline, HTML left unescaped.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// parseUUID checks a channel id and returns it lower-cased.
func parseUUID(s string) (string, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	if !workspace.IsChannelID(l) {
		return "", userErr("invalid UUID: %q", s)
	}
	return l, nil
}

// parseHexID checks an event id (64 hex) and returns it lower-cased.
func parseHexID(s string) (string, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	if !nostrkey.IsLowerHex(l, 64) {
		return "", userErr("must be a 64-character hex string: %q", s)
	}
	return l, nil
}

// parsePubkey accepts 64 hex or npub1… and returns hex.
func parsePubkey(s string) (string, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(strings.ToLower(t), "npub1") {
		h, err := nostrkey.NpubToHex(t)
		if err != nil {
			return "", userErr("invalid npub: %q", s)
		}
		return h, nil
	}
	return parseHexID(t)
}

// tagValue returns the second element of the first tag named name.
func tagValue(ev *nostr.Event, name string) string {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == name {
			return t[1]
		}
	}
	return ""
}

func hasTag(ev *nostr.Event, tag ...string) bool {
	for _, t := range ev.Tags {
		if len(t) == len(tag) {
			same := true
			for i := range t {
				same = same && t[i] == tag[i]
			}
			if same {
				return true
			}
		}
	}
	return false
}

// channelOf is an event's channel: its first h tag, which must be a UUID.
func channelOf(ev *nostr.Event) (string, error) {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "h" {
			ch, err := parseUUID(t[1])
			if err != nil {
				break
			}
			return ch, nil
		}
	}
	return "", otherErr("event %s has no valid channel (h) tag", ev.ID)
}

// threadRoot derives the root of parent's thread (spec §6.4): a valid
// root marker together with a reply marker names the root; a reply marker
// alone names it; otherwise the parent is top-level and is its own root.
func threadRoot(parent *nostr.Event) string {
	var root, reply string
	for _, t := range parent.Tags {
		if len(t) < 4 || t[0] != "e" || !nostrkey.IsLowerHex(strings.ToLower(t[1]), 64) {
			continue
		}
		switch t[3] {
		case "root":
			if root == "" {
				root = strings.ToLower(t[1])
			}
		case "reply":
			if reply == "" {
				reply = strings.ToLower(t[1])
			}
		}
	}
	switch {
	case root != "" && reply != "":
		return root
	case reply != "":
		return reply
	}
	return parent.ID
}

// threadTags are the e tags of a reply to parent: a direct reply to a
// top-level message carries only the reply marker.
func threadTags(parent *nostr.Event) nostr.Tags {
	root := threadRoot(parent)
	if root == parent.ID {
		return nostr.Tags{{"e", parent.ID, "", "reply"}}
	}
	return nostr.Tags{{"e", root, "", "root"}, {"e", parent.ID, "", "reply"}}
}
