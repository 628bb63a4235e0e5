package acpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
)

// DefaultAskTimeout is how long a permission request waits for a person
// (Spec.Ask) before it is answered with the reject option: long enough to
// see a notification and answer it, short enough that a turn nobody
// watches does not hold its agent for the whole hard cap.
const DefaultAskTimeout = 10 * time.Minute

// maxToolCallsSeen bounds the tool calls whose title and input are kept
// for permission requests that name only the call's id (claude-agent-acp
// does); the map is cleared when full, so an old call asks with less.
const maxToolCallsSeen = 256

// maxToolCallField bounds one kept field (title, kind, rawInput, content)
// of a tool call; a longer one is not kept.
const maxToolCallField = 64 << 10

// toolCallSeen is the latest title, kind, rawInput and content of a tool
// call, as its tool_call and tool_call_update notifications said them.
type toolCallSeen struct {
	Title    json.RawMessage `json:"title,omitempty"`
	Kind     json.RawMessage `json:"kind,omitempty"`
	RawInput json.RawMessage `json:"rawInput,omitempty"`
	Content  json.RawMessage `json:"content,omitempty"`
}

// noteToolCall keeps what a tool call's update says of it.
func (a *Agent) noteToolCall(session string, params json.RawMessage) {
	var p struct {
		Update struct {
			ToolCallID string `json:"toolCallId"`
			toolCallSeen
		} `json:"update"`
	}
	if json.Unmarshal(params, &p) != nil || p.Update.ToolCallID == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	key := session + "|" + p.Update.ToolCallID
	seen := a.toolCalls[key]
	if seen == nil {
		if a.toolCalls == nil || len(a.toolCalls) >= maxToolCallsSeen {
			a.toolCalls = map[string]*toolCallSeen{}
		}
		seen = &toolCallSeen{}
		a.toolCalls[key] = seen
	}
	for _, f := range []struct {
		dst *json.RawMessage
		src json.RawMessage
	}{
		{&seen.Title, p.Update.Title}, {&seen.Kind, p.Update.Kind}, {&seen.RawInput, p.Update.RawInput}, {&seen.Content, p.Update.Content},
	} {
		if len(f.src) > 0 && string(f.src) != "null" && len(f.src) <= maxToolCallField {
			*f.dst = f.src
		}
	}
}

// withSeen fills what a permission request's toolCall leaves out from
// the request's title and what the call's updates said.
func (a *Agent) withSeen(session string, tc json.RawMessage, title string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(tc, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	var id string
	json.Unmarshal(m["toolCallId"], &id)
	if _, ok := m["title"]; !ok && title != "" {
		m["title"], _ = json.Marshal(title)
	}
	a.mu.Lock()
	seen := a.toolCalls[session+"|"+id]
	a.mu.Unlock()
	if seen == nil {
		seen = &toolCallSeen{}
	}
	for k, v := range map[string]json.RawMessage{"title": seen.Title, "kind": seen.Kind, "rawInput": seen.RawInput, "content": seen.Content} {
		if _, ok := m[k]; !ok && len(v) > 0 {
			m[k] = v
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return tc
	}
	return out
}

// ErrDecideAlone, returned by Spec.Ask, makes the client answer the
// request as it does without Ask: allow_once, else reject_once.
var ErrDecideAlone = errors.New("acpclient: decide the permission request alone")

// PermissionAsk is one session/request_permission handed to Spec.Ask.
type PermissionAsk struct {
	SessionID string
	// ToolCall is the request's toolCall (a ToolCallUpdate: title, kind,
	// content, rawInput), with what it leaves out filled in from the
	// call's earlier updates.
	ToolCall json.RawMessage
	Options  []acp.PermissionOption
	// Rule is the buzz-agent approval rule that raised the request
	// (_meta.buzzApprovalRule); "" when the agent asked of its own accord.
	Rule string
}

// permission answers a session/request_permission: through Spec.Ask when
// set, alone otherwise. A request during a cancel is answered "cancelled"
// (spec §9.7).
func (a *Agent) permission(ctx context.Context, params json.RawMessage) (any, error) {
	var p acp.PermissionRequest
	if err := json.Unmarshal(params, &p); err != nil {
		a.log.Error("permission request", "err", err)
		return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "decode permission request: %v", err)
	}
	a.log.Debug("permission request", "params", truncUTF8(string(params), maxStderrTail))
	cancelled := acp.PermissionResponse{Outcome: acp.PermissionOutcome{Outcome: "cancelled"}}
	tc := p.ToolCall
	if len(tc) == 0 && p.Subject != nil {
		tc = p.Subject.ToolCall
	}
	tc = a.withSeen(p.SessionID, tc, p.Title)
	a.mu.Lock()
	if a.cancelling {
		a.mu.Unlock()
		return cancelled, nil
	}
	if a.ask == nil {
		a.mu.Unlock()
		return a.decideAlone(params)
	}
	rule := ""
	if p.Meta != nil {
		rule = p.Meta.Rule
	}
	actx, cancel := context.WithTimeout(ctx, a.askTimeout)
	defer cancel()
	if a.asks == nil {
		a.asks = map[uint64]context.CancelFunc{}
	}
	a.askSeq++
	seq := a.askSeq
	a.asks[seq] = cancel
	a.asking.Add(1)
	a.mu.Unlock()
	id, err := a.ask(actx, PermissionAsk{SessionID: p.SessionID, ToolCall: tc, Options: p.Options, Rule: rule})
	a.mu.Lock()
	delete(a.asks, seq)
	a.asking.Add(-1)
	cancelling := a.cancelling
	a.mu.Unlock()
	a.touch() // the answer restarts the idle timer
	switch {
	case cancelling:
		return cancelled, nil
	case errors.Is(err, ErrDecideAlone):
		return a.decideAlone(params)
	case actx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		// Past the timeout even an allow comes too late.
		err = fmt.Errorf("nobody answered within %v", a.askTimeout)
	case err == nil && offered(p.Options, id):
		return acp.PermissionResponse{Outcome: acp.PermissionOutcome{Outcome: "selected", OptionID: id}}, nil
	case err == nil:
		err = fmt.Errorf("the answer names option %q, which the agent did not offer", id)
	}
	reject := rejectOption(p.Options)
	a.log.Warn("permission request rejected", "session", p.SessionID, "why", err, "option", reject)
	if reject == "" {
		// No reject option to name: cancelled is the only answer left
		// that allows nothing.
		return cancelled, nil
	}
	return acp.PermissionResponse{Outcome: acp.PermissionOutcome{Outcome: "selected", OptionID: reject}}, nil
}

// decideAlone is the answer without a person: allow_once, else reject_once.
func (a *Agent) decideAlone(params json.RawMessage) (any, error) {
	id, err := choosePermission(params)
	if err != nil {
		a.log.Error("permission request", "err", err)
		return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "%v", err)
	}
	return acp.PermissionResponse{Outcome: acp.PermissionOutcome{Outcome: "selected", OptionID: id}}, nil
}

// cancelAsks marks the agent cancelling and ends every Ask waiting, which
// then answers "cancelled".
func (a *Agent) cancelAsks() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancelling = true
	for _, cancel := range a.asks {
		cancel()
	}
}

// offered reports whether id is one of opts' option ids.
func offered(opts []acp.PermissionOption, id string) bool {
	for _, o := range opts {
		if id != "" && o.OptionID == id {
			return true
		}
	}
	return false
}

// rejectOption is the id of the reject_once option, else reject_always;
// "" when the agent offered neither.
func rejectOption(opts []acp.PermissionOption) string {
	for _, want := range []string{"reject_once", "reject_always"} {
		for _, o := range opts {
			if o.Kind == want && o.OptionID != "" {
				return o.OptionID
			}
		}
	}
	return ""
}
