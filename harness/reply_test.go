package harness

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// TestAnsweredIDsByThreadParent: a message answers the event it replies
// to (its thread parent), not the thread's root it also names, and a
// message in the channel that replies to nothing answers no event.
func TestAnsweredIDsByThreadParent(t *testing.T) {
	root, a, b, other := strings.Repeat("1", 64), strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	batch := []*Event{{Event: nostr.Event{ID: root}}, {Event: nostr.Event{ID: a}}, {Event: nostr.Event{ID: b}}}
	msgs := []*nostr.Event{
		{Tags: nostr.Tags{{"e", root, "", "root"}, {"e", a, "", "reply"}}}, // answers a, not root
		{Tags: nostr.Tags{{"e", other, "", "reply"}}},                      // another thread
		{Tags: nostr.Tags{{"h", "ch"}}},                                    // top level
	}
	got := answeredIDs(msgs, batch)
	if !got[a] || got[root] || got[b] || got[other] || len(got) != 1 {
		t.Errorf("answeredIDs = %v; want only %s…", got, a[:8])
	}
	if got := answeredIDs([]*nostr.Event{{Tags: nostr.Tags{{"e", b, "", "reply"}}}}, batch); !got[b] {
		t.Errorf("a direct reply (lone reply marker) to %s… not counted: %v", b[:8], got)
	}
}

// TestReplyText: the reply guard posts a turn's final text as it is,
// marked where it was cut, and the notice when there was none.
func TestReplyText(t *testing.T) {
	for _, c := range []struct {
		out  turnOutcome
		want string
	}{
		{turnOutcome{finalText: "done"}, "done"},
		{turnOutcome{finalText: "long", textCut: true}, "long" + cutNote},
		{turnOutcome{}, noAnswerNotice},
		{turnOutcome{textCut: true}, noAnswerNotice},
	} {
		if got := c.out.replyText(); got != c.want {
			t.Errorf("replyText of %q (cut %v) = %q; want %q", c.out.finalText, c.out.textCut, got, c.want)
		}
	}
}
