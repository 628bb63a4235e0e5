package relay

import (
	"strconv"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
)

// eventJSONLen returns the length of ev as go-nostr serialises it, the
// form it is sent in to every reader, without building the JSON: string
// escapes (\", \\, \n, \u0001, \ufffd for broken UTF-8, \u2028) are
// counted as the encoder writes them. FuzzEventJSONLen holds it to
// ev.MarshalJSON.
func eventJSONLen(ev *nostr.Event) int {
	n := len(`{"kind":`) + intLen(int64(ev.Kind))
	if ev.ID != "" {
		n += len(`,"id":`) + jsonStringLen(ev.ID)
	}
	if ev.PubKey != "" {
		n += len(`,"pubkey":`) + jsonStringLen(ev.PubKey)
	}
	n += len(`,"created_at":`) + intLen(int64(ev.CreatedAt))
	n += len(`,"tags":[]`)
	for i, t := range ev.Tags {
		if i > 0 {
			n++ // ,
		}
		n += 2 // [ ]
		for j, v := range t {
			if j > 0 {
				n++
			}
			n += jsonStringLen(v)
		}
	}
	n += len(`,"content":`) + jsonStringLen(ev.Content)
	if ev.Sig != "" {
		n += len(`,"sig":`) + jsonStringLen(ev.Sig)
	}
	return n + 1 // }
}

func intLen(v int64) int {
	var b [20]byte
	return len(strconv.AppendInt(b[:0], v, 10))
}

// jsonStringLen is the length of s as a quoted JSON string written by
// easyjson with HTML escaping off.
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\t' || c == '\r' || c == '\n':
				n += 2
			case c < 0x20:
				n += 6 // \u00XX
			default:
				n++
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += w
		}
		i += w
	}
	return n
}
