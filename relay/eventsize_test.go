package relay

import (
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// FuzzEventJSONLen holds eventJSONLen to the length of go-nostr's own
// serialisation, escapes and broken UTF-8 included.
func FuzzEventJSONLen(f *testing.F) {
	f.Add(1, int64(1700000000), "hello", "h", "x\"\\\n\t\r\x01", "\u2028\u2029\xff\xfe", true)
	f.Add(-5, int64(-1), "", "", "", "", false)
	f.Add(30023, int64(1<<40), "<&>", "é", "\x00\x1f\x7f", "日本", true)
	f.Fuzz(func(t *testing.T, kind int, at int64, content, t0, t1, t2 string, ids bool) {
		ev := nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at), Content: content, Tags: nostr.Tags{{t0, t1}, {t2}, {}}}
		if ids {
			ev.ID, ev.PubKey, ev.Sig = t1, t2, t0
		}
		b, err := ev.MarshalJSON()
		if err != nil {
			t.Skip()
		}
		if got := eventJSONLen(&ev); got != len(b) {
			t.Fatalf("eventJSONLen = %d; want %d for %s", got, len(b), b)
		}
		ev.Tags = nil
		if b, _ = ev.MarshalJSON(); eventJSONLen(&ev) != len(b) {
			t.Fatalf("without tags: eventJSONLen = %d; want %d for %s", eventJSONLen(&ev), len(b), b)
		}
	})
}
