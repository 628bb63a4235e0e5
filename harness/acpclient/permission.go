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

// ErrDecideAlone, returned by Spec.Ask, makes the client answer the
// request as it does without Ask: allow_once, else reject_once.
var ErrDecideAlone = errors.New("acpclient: decide the permission request alone")

// PermissionAsk is one session/request_permission handed to Spec.Ask.
type PermissionAsk struct {
	SessionID string
	// ToolCall is the request's toolCall (a ToolCallUpdate: title, kind,
	// content, rawInput), as the agent sent it.
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
	cancelled := acp.PermissionResponse{Outcome: acp.PermissionOutcome{Outcome: "cancelled"}}
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
	id, err := a.ask(actx, PermissionAsk{SessionID: p.SessionID, ToolCall: p.ToolCall, Options: p.Options, Rule: rule})
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
