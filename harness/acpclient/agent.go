package acpclient

import (
	"encoding/json"
	"time"
)

// What the agent said of itself in initialize. They are set before Start
// returns and never change.

// Name is the agent's name (agentInfo.name or v2's info.name), trimmed and
// lowercased; "unknown" when it gave none.
func (a *Agent) Name() string { return a.name }

// Protocol is the ACP version the agent chose: 1 or 2.
func (a *Agent) Protocol() int { return a.protocol }

// Steering reports whether the agent takes _session/steering.
func (a *Agent) Steering() bool { return a.steering }

// SystemPromptCap reports whether the agent advertises the session
// systemPrompt capability ({mode, content} in session/new).
func (a *Agent) SystemPromptCap() bool { return a.systemPromptCap }

// LoadSession reports whether a session the agent made before a restart
// can be taken up again with session/load.
func (a *Agent) LoadSession() bool { return a.loadSession }

// AcceptsImages reports whether the agent advertised
// promptCapabilities.image: prompts may carry image content blocks.
func (a *Agent) AcceptsImages() bool { return a.images }

// InitReply is the agent's initialize answer as it sent it.
func (a *Agent) InitReply() json.RawMessage { return a.initRaw }

// Pid is the agent process's id.
func (a *Agent) Pid() int { return a.child.Pid() }

// LastOutput is when the agent last sent a message; the zero time before
// the first.
func (a *Agent) LastOutput() time.Time {
	if n := a.lastOutput.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// StdinTimedOut reports whether a write to the agent's stdin timed out,
// which ended the connection.
func (a *Agent) StdinTimedOut() bool { return a.stdinTimedOut.Load() }

// GooseSystemPrompt says whether goose's system-prompt extension works
// with this agent: 0 untried, 1 works, -1 unsupported. Only the goroutine
// that owns the agent's slot reads and sets it.
func (a *Agent) GooseSystemPrompt() int { return a.goose }

// SetGooseSystemPrompt records what trying the extension showed.
func (a *Agent) SetGooseSystemPrompt(v int) { a.goose = v }

// HasRun reports whether the running prompt has a goose run id, so that a
// native goose steer can reach it.
func (a *Agent) HasRun() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runID != ""
}

// Catalog is the models an agent offered in its first session/new:
// configOptions values of category "model" and models.availableModels ids.
type Catalog map[string]bool

// Offers reports whether model is in the catalog.
func (c Catalog) Offers(model string) bool { return c[model] }

// Catalog returns the catalog cached from the agent's first session/new;
// nil until then.
func (a *Agent) Catalog() Catalog {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.catalog
}

// NoteCatalog caches c unless a catalog is cached already.
func (a *Agent) NoteCatalog(c Catalog) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.catalog == nil {
		a.catalog = c
	}
}

// clipRunes cuts s to n runes, marking the cut with an ellipsis.
func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
