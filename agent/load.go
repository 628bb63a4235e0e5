package agent

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"buzzbox/agent/llm"
	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/workspace"
)

// capabilities is what initialize offers: session/load, session/list and
// session/resume only when sessions are kept on disk.
func (a *Agent) capabilities() acp.AgentCapabilities {
	c := acp.AgentCapabilities{MCPCapabilities: acp.MCPCapabilities{HTTP: true}, PromptCapabilities: acp.PromptCapabilities{Image: true}}
	if a.opts.StateDir != "" {
		c.LoadSession = true
		c.SessionCapabilities = &acp.SessionCapabilities{List: &struct{}{}, Resume: &struct{}{}}
	}
	return c
}

// loadSession answers session/load (history replayed, as ACP asks, as
// session/update notifications before the answer) and session/resume
// (replayed only when replayFrom asks for it). The session's MCP servers
// are the ones this request names; its hints and skills are read anew.
func (a *Agent) loadSession(ctx context.Context, req *jsonrpc.Request, method string) (any, error) {
	var p acp.LoadSessionParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	replay := method == acp.MethodSessionLoad
	if method == acp.MethodSessionResume && p.ReplayFrom != nil {
		if p.ReplayFrom.Type != "start" {
			return nil, invalid("%s: replayFrom type %q not supported (only \"start\")", method, p.ReplayFrom.Type)
		}
		replay = true
	}
	if a.opts.StateDir == "" {
		return nil, invalid("%s: this agent keeps no sessions (no state dir: set %s or HOME)", method, workspace.EnvAgentStateDir)
	}
	if !validSessionID(p.SessionID) {
		return nil, invalid("%s: unknown session %q", method, clip(p.SessionID, markerFieldCap))
	}
	a.mu.Lock()
	old := a.sessions[p.SessionID]
	a.mu.Unlock()
	if old != nil {
		old.mu.Lock()
		busy := old.busy
		old.mu.Unlock()
		if busy {
			return nil, invalid("%s: session %s is running a prompt; cancel it first", method, p.SessionID)
		}
	}
	path := filepath.Join(a.opts.StateDir, p.SessionID+".json")
	sf, history, err := readState(path, maxStateFileBytes(a.opts.MaxHistoryBytes))
	if errors.Is(err, errUnknownSession) {
		return nil, invalid("%s: unknown session %s", method, p.SessionID)
	}
	if err != nil {
		a.log.Warn("session state unreadable", "session", p.SessionID, "err", err)
		return nil, jsonrpc.Errorf(codeAgent, "%s: %v", method, err)
	}
	if sf.SessionID != p.SessionID {
		return nil, jsonrpc.Errorf(codeAgent, "%s: %s holds session %s", method, path, sf.SessionID)
	}
	base := sf.System
	if strings.TrimSpace(p.SystemPrompt) != "" {
		base = p.SystemPrompt
	}
	if base == "" {
		base = a.opts.SystemPrompt
	}
	s, err := a.openSession(ctx, method, p.Cwd, p.MCPServers, base)
	if err != nil {
		return nil, err
	}
	s.id, s.created = sf.SessionID, sf.Created
	s.history, s.original, s.handoffs, s.model = history, sf.Original, sf.Handoffs, sf.Model
	if old != nil {
		a.mu.Lock()
		if a.sessions[s.id] == old {
			delete(a.sessions, s.id)
			a.created--
		}
		a.mu.Unlock()
		old.reg.Close()
	}
	if replay {
		s.replay()
	}
	if err := a.register(method, s); err != nil {
		return nil, err
	}
	a.log.Info("session loaded", "session", s.id, "cwd", s.cwd, "items", len(history), "replayed", replay)
	return acp.LoadSessionResult{Models: a.models()}, nil
}

// replay sends the history as the updates that made it: user and agent
// message chunks, each tool call and its result.
func (s *Session) replay() {
	for _, m := range s.history {
		switch m.Role {
		case llm.RoleUser:
			s.update(acp.Update{SessionUpdate: acp.UpdateUserMessageChunk, Content: &acp.ContentBlock{Type: "text", Text: m.Text}})
		case llm.RoleAssistant:
			if m.Text != "" {
				s.update(acp.Update{SessionUpdate: acp.UpdateAgentMessageChunk, Content: &acp.ContentBlock{Type: "text", Text: m.Text}})
			}
			for _, c := range m.Calls {
				s.update(acp.Update{SessionUpdate: acp.UpdateToolCall, ToolCallID: c.ID, Title: c.Name, Kind: "other",
					Status: acp.StatusPending, RawInput: c.Args})
			}
		case llm.RoleTool:
			status := acp.StatusCompleted
			if m.Result.IsError {
				status = acp.StatusFailed
			}
			s.update(acp.Update{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: m.Result.CallID, Status: status,
				ToolContent: []acp.ToolCallContent{{Type: "content", Content: &acp.ContentBlock{Type: "text", Text: lossyText(m.Result.Parts)}}},
				RawOutput:   map[string]bool{"isError": m.Result.IsError}})
		}
	}
}

// listSessions answers session/list from the state dir, newest first, a
// page at a time; the cursor is the offset of the next page.
func (a *Agent) listSessions(req *jsonrpc.Request) (any, error) {
	var p acp.ListSessionsParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	off := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 {
			return nil, invalid("session/list: cursor %q is not one this agent gave", clip(p.Cursor, markerFieldCap))
		}
		off = n
	}
	res := acp.ListSessionsResult{Sessions: []acp.SessionInfo{}}
	if a.opts.StateDir == "" {
		return res, nil
	}
	all := listStates(a.opts.StateDir, maxStateFileBytes(a.opts.MaxHistoryBytes), func(err error) {
		a.log.Warn("session state skipped", "err", err)
	})
	var match []*stateFile
	for _, sf := range all {
		if p.Cwd == "" || filepath.Clean(p.Cwd) == filepath.Clean(sf.Cwd) {
			match = append(match, sf)
		}
	}
	for i := off; i < len(match) && len(res.Sessions) < listPageSize; i++ {
		sf := match[i]
		res.Sessions = append(res.Sessions, acp.SessionInfo{SessionID: sf.SessionID, Cwd: sf.Cwd, Title: sf.Title,
			UpdatedAt: sf.Updated.UTC().Format(time.RFC3339)})
	}
	if next := off + len(res.Sessions); next < len(match) {
		res.NextCursor = strconv.Itoa(next)
	}
	return res, nil
}
