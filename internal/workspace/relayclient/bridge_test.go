package relayclient

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func TestDecodeEvents(t *testing.T) {
	n := 0
	for _, in := range []string{"[]", "null", `[{"id":"a","kind":1,"tags":[]},{"id":"b"}]`} {
		if err := decodeEvents(strings.NewReader(in), func(*nostr.Event) { n++ }); err != nil {
			t.Errorf("decodeEvents(%s): %v", in, err)
		}
	}
	if n != 2 {
		t.Errorf("decoded %d events; want 2", n)
	}
	for _, in := range []string{"{}", "[1]", "[", `"x"`} {
		if err := decodeEvents(strings.NewReader(in), func(*nostr.Event) {}); err == nil {
			t.Errorf("decodeEvents(%s) accepted", in)
		}
	}
}
