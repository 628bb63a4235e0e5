package acp

import (
	"encoding/json"
	"testing"
)

// FuzzSystemPrompt: any JSON decodes as a SystemPrompt or is refused
// without a panic; one that decodes encodes and decodes to itself.
func FuzzSystemPrompt(f *testing.F) {
	for _, s := range []string{`"be brief"`, `{"mode":"append","content":[{"type":"text","text":"be brief"}]}`,
		`{"mode":"override","content":[]}`, `null`, `42`, `{"mode":1}`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p SystemPrompt
		if json.Unmarshal(b, &p) != nil {
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", p, err)
		}
		var q SystemPrompt
		if err := json.Unmarshal(out, &q); err != nil || q != p {
			t.Errorf("SystemPrompt %s → %+v → %s → %+v, %v; want the same", b, p, out, q, err)
		}
	})
}

// TestSystemPromptWire pins both forms as agents read them.
func TestSystemPromptWire(t *testing.T) {
	for _, tc := range []struct {
		p    SystemPrompt
		want string
	}{
		{SystemPrompt{Text: "be brief"}, `"be brief"`},
		{SystemPrompt{Text: "be brief", Mode: "append"}, `{"mode":"append","content":[{"type":"text","text":"be brief"}]}`},
	} {
		if got, err := json.Marshal(tc.p); err != nil || string(got) != tc.want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tc.p, got, err, tc.want)
		}
	}
}
