package acpclient

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChoosePermission(t *testing.T) {
	for _, tc := range []struct {
		opts, want string
		err        bool
	}{
		{`[{"optionId":"r","kind":"reject_once"},{"optionId":"a1","kind":"allow_once"}]`, "a1", false},
		{`[{"optionId":"r","kind":"reject_once"},{"optionId":"x","kind":"allow_always"}]`, "r", false},
		{`[{"optionId":"x","kind":"allow_always"}]`, "", true},
		{`[{"kind":"allow_once"}]`, "", true},
		{`[{"kind":"reject_once"}]`, "reject", false},
	} {
		got, err := choosePermission(json.RawMessage(`{"options":` + tc.opts + `}`))
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("choosePermission(%s) = %q, %v; want %q, error %v", tc.opts, got, err, tc.want, tc.err)
		}
	}
}

func TestStopReasons(t *testing.T) {
	for _, s := range []string{"end_turn", "END_TURN", "cancelled", "max_tokens", "max_turn_requests", "refusal"} {
		if _, ok := validStop(s); !ok {
			t.Errorf("validStop(%q) = false", s)
		}
	}
	for _, s := range []string{"", "done", "error"} {
		if _, ok := validStop(s); ok {
			t.Errorf("validStop(%q) = true", s)
		}
	}
}

// TestFinalTextIsTheLastPiece: the reply guard posts what the agent wrote
// after its last tool call, or before it when nothing came after, cut at
// maxFinalText on a character boundary.
func TestFinalTextIsTheLastPiece(t *testing.T) {
	a := &Agent{}
	feed := func(pieces ...string) {
		a.text = &turnText{session: "s"}
		for _, p := range pieces {
			if p == "|" {
				a.text.breakPiece()
			} else {
				a.text.add(p)
			}
		}
	}
	for _, tc := range []struct {
		pieces []string
		want   string
	}{
		{[]string{"Let me look.", "|", "The answer ", "is 42."}, "The answer is 42."},
		{[]string{"The answer is 42.", "|", "  "}, "The answer is 42."},
		{[]string{"|", "|"}, ""},
	} {
		feed(tc.pieces...)
		if got, _ := a.FinalText("s"); got != tc.want {
			t.Errorf("finalText(%q) = %q; want %q", tc.pieces, got, tc.want)
		}
	}
	if got, _ := a.FinalText("other"); got != "" {
		t.Errorf("finalText of another session = %q; want empty", got)
	}
	feed(strings.Repeat("é", maxFinalText))
	got, cut := a.FinalText("s")
	if !cut || len(got) > maxFinalText || !utf8.ValidString(got) {
		t.Errorf("over-long text: %d bytes, cut %v, valid %v; want <= %d, cut, valid", len(got), cut, utf8.ValidString(got), maxFinalText)
	}
}
