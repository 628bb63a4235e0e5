package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
)

// ACP v2 (offered by a client asking protocolVersion 2 or later) differs
// from v1 in what this agent sends, not in the turn itself:
//   - initialize answers with info and capabilities (v1: agentInfo,
//     agentCapabilities);
//   - session/prompt answers with the user message's messageId as soon as
//     the message is in; the work's end is a state_update (state idle, the
//     stop reason, and the error when it failed) — v1 answers the request
//     with the stop reason at the end;
//   - a tool call starts with its first tool_call_update (v1: tool_call),
//     every message chunk names its messageId, and keepalive is not a v2
//     update kind (it is not sent).
//
// Requests keep their v1 names and params.

// methodSessionClose ends a session (v2 baseline; v1 sessionCapabilities.close).
const methodSessionClose = "session/close"

// v2 reports whether the client chose ACP v2 at initialize.
func (a *Agent) v2() bool { return a.protocol.Load() >= 2 }

// initializeV2 is initialize's answer under v2.
func (a *Agent) initializeV2() any {
	// Any session capabilities mean v2's baseline session methods; the
	// MCP transports beyond stdio are object markers.
	session := map[string]any{"mcp": map[string]any{"http": map[string]any{}}}
	return map[string]any{
		"protocolVersion": 2,
		"info":            acp.Implementation{Name: "buzz-agent", Version: a.version},
		"capabilities":    map[string]any{"session": session, "prompt": map[string]any{"image": map[string]any{}}},
		"authMethods":     []any{},
	}
}

// v2Update rewrites a v1 update for a v2 client; ok is false for one v2
// has no kind for.
func (s *Session) v2Update(u any) (any, bool) {
	b, err := json.Marshal(u)
	if err != nil {
		return u, true
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return u, true
	}
	switch m["sessionUpdate"] {
	case acp.UpdateKeepalive:
		return nil, false
	case acp.UpdateToolCall:
		m["sessionUpdate"] = acp.UpdateToolCallUpdate
	case acp.UpdateAgentMessageChunk, acp.UpdateAgentThoughtChunk, acp.UpdateUserMessageChunk:
		if id, _ := m["messageId"].(string); id == "" {
			m["messageId"] = fmt.Sprintf("%s-replay-%d", s.id, s.replaySeq.Add(1))
		}
	}
	return m, true
}

// promptV2 answers session/prompt the v2 way: the messageId at once, the
// turn on its own goroutine, its end as an idle state_update. It ends when
// the turn does; a cancel, session/close or the connection's end stops it.
func (a *Agent) promptV2(ctx context.Context, req *jsonrpc.Request) (any, error) {
	s, p, err := a.promptSession(req)
	if err != nil {
		return nil, err
	}
	if len(p.Prompt) == 0 {
		return nil, invalid("session/prompt: prompt must not be empty")
	}
	if _, _, err := joinPrompt(p.Prompt); err != nil {
		return nil, err
	}
	msgID, err := randomID("msg_")
	if err != nil {
		return nil, jsonrpc.Errorf(codeAgent, "%v", err)
	}
	s.update(map[string]any{"sessionUpdate": "user_message", "messageId": msgID, "content": p.Prompt})
	s.update(map[string]any{"sessionUpdate": "state_update", "state": "running"})
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.turns.Add(1)
	go func() { // the turn; ends with it
		defer a.turns.Done()
		defer cancel()
		go func() { // ends with the turn or the connection
			select {
			case <-a.conn.Done():
				cancel()
			case <-tctx.Done():
			}
		}()
		res, err := a.prompt(tctx, req)
		idle := map[string]any{"sessionUpdate": "state_update", "state": "idle"}
		var pr acp.PromptResult
		switch r := res.(type) {
		case acp.PromptResult:
			pr = r
		case *acp.PromptResult:
			pr = *r
		}
		switch {
		case err != nil:
			idle["stopReason"] = "error"
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) {
				idle["error"] = rpcErr
			} else {
				idle["error"] = map[string]any{"code": codeAgent, "message": err.Error()}
			}
		case pr.StopReason != "":
			idle["stopReason"] = pr.StopReason
		default:
			idle["stopReason"] = acp.StopEndTurn
		}
		s.update(idle)
	}()
	return map[string]any{"messageId": msgID}, nil
}

// closeSession answers session/close: the running turn is cancelled, the
// session's MCP servers stopped and the session forgotten. An unknown
// session closes fine, as ACP asks.
func (a *Agent) closeSession(req *jsonrpc.Request) (any, error) {
	var p acp.CancelParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	a.mu.Lock()
	s := a.sessions[p.SessionID]
	delete(a.sessions, p.SessionID)
	a.mu.Unlock()
	if s != nil {
		s.cancelTurn()
		s.reg.Close()
	}
	return map[string]any{}, nil
}
