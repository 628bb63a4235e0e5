package relay

import (
	"reflect"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func TestParseSearch(t *testing.T) {
	q, err := parseSearch(`release "the notes" from:@bob in:#general has:file before:2026-02-01 after:2026-01-01 x:y`)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q.words, []string{"release", "x:y"}) || !reflect.DeepEqual(q.phrases, []string{"the notes"}) ||
		!reflect.DeepEqual(q.from, []string{"bob"}) || !reflect.DeepEqual(q.in, []string{"general"}) || !q.hasFile ||
		q.before == nil || *q.before != 1769904000 || q.after == nil || *q.after != 1767311999 {
		t.Errorf("parseSearch = %+v", q)
	}
	for _, bad := range []string{"before:friday", "has:cats", strings.Repeat("a ", maxSearchTerms+1)} {
		if _, err := parseSearch(bad); err == nil || !strings.HasPrefix(err.Error(), "invalid: search:") {
			t.Errorf("parseSearch(%q) = %v; want an invalid: error", bad, err)
		}
	}
}

// FuzzSearchQuery: any search string parses or is refused with an
// invalid: reason, never a panic; a phrase is found in any content that
// holds it between spaces, and the phrase check never panics on others.
func FuzzSearchQuery(f *testing.F) {
	for _, s := range []string{`release "the notes" from:@bob`, `"`, `""`, `in:# has:file before:2026-01-01`, `"a  b" "c`, "\"ü Straße\" x:"} {
		f.Add(s, "some content")
	}
	f.Fuzz(func(t *testing.T, s, content string) {
		q, err := parseSearch(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: search:") {
				t.Fatalf("parseSearch(%q) = %v", s, err)
			}
			return
		}
		q.matchesPhrases(&nostr.Event{Content: content})
		for _, p := range q.phrases {
			ev := &nostr.Event{Content: content + " " + p + " " + content}
			one := searchQuery{phrases: []string{p}}
			if !one.matchesPhrases(ev) {
				t.Fatalf("phrase %q not found in %q", p, ev.Content)
			}
		}
	})
}
