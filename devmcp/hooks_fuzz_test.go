package devmcp

import (
	"encoding/json"
	"testing"
)

// FuzzRunsHooks: whatever a client puts in its capabilities and name,
// deciding whether it runs hooks never panics, and the answer is yes
// exactly when the name is buzz-agent or capabilities.experimental holds
// the hooks capability.
func FuzzRunsHooks(f *testing.F) {
	f.Add([]byte(`{}`), "claude-code")
	f.Add([]byte(`{"experimental":{"buzz/hooks":{}}}`), "x")
	f.Add([]byte(`{"experimental":{"buzz/hooks":null}}`), "")
	f.Add([]byte(`{"experimental":[]}`), "buzz-agent")
	f.Add([]byte(`[`), "codex")
	f.Add([]byte(`null`), "")
	f.Fuzz(func(t *testing.T, caps []byte, name string) {
		got := runsHooks(caps, &implementation{Name: name})
		var c struct {
			Experimental map[string]json.RawMessage `json:"experimental"`
		}
		has := false
		if json.Unmarshal(caps, &c) == nil {
			_, has = c.Experimental[hooksCapability]
		}
		if want := name == hooksClientName || has; got != want {
			t.Errorf("runsHooks(%q, %q) = %v; want %v", caps, name, got, want)
		}
		if runsHooks(caps, nil) != has {
			t.Errorf("runsHooks(%q, nil) = %v; want %v", caps, !has, has)
		}
	})
}
