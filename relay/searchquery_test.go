package relay

import (
	"reflect"
	"strings"
	"testing"
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
