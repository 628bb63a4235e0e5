package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"buzzbox/agent/llm"
	"buzzbox/internal/statedir"
)

// A session's state file, <state dir>/<session id>.json, holds what a
// restarted agent needs to go on with the conversation: the history (cut
// to BUZZ_AGENT_MAX_HISTORY_BYTES the way a turn cuts it), the first
// prompt, the handoff count, the model override and the base system
// prompt. It holds no credentials: the provider key stays in the
// environment and MCP servers (whose env and headers may carry tokens)
// come anew with every session/load. It is rewritten whole after every
// turn, through a temporary file renamed over the old one, so a crash
// leaves the old file or the new one, never half of either.

// stateVersion is the state file format written and the only one read.
const stateVersion = 1

// stateFile is the on-disk form of a session.
type stateFile struct {
	Version   int            `json:"version"`
	SessionID string         `json:"sessionId"`
	Cwd       string         `json:"cwd"`
	Title     string         `json:"title,omitempty"`
	Created   time.Time      `json:"created"`
	Updated   time.Time      `json:"updated"`
	Model     string         `json:"model,omitempty"`
	System    string         `json:"system,omitempty"`
	Original  string         `json:"original,omitempty"`
	Handoffs  int            `json:"handoffs,omitempty"`
	History   []stateMessage `json:"history"`
}

// stateMessage is one history item on disk; Role is user, assistant or
// tool.
type stateMessage struct {
	Role             string            `json:"role"`
	Text             string            `json:"text,omitempty"`
	Calls            []stateCall       `json:"calls,omitempty"`
	ReasoningDetails json.RawMessage   `json:"reasoningDetails,omitempty"`
	ReasoningContent string            `json:"reasoningContent,omitempty"`
	Thinking         []json.RawMessage `json:"thinking,omitempty"`
	CallID           string            `json:"callId,omitempty"`
	Parts            []statePart       `json:"parts,omitempty"`
	IsError          bool              `json:"isError,omitempty"`
}

type stateCall struct {
	ID    string                     `json:"id"`
	Name  string                     `json:"name"`
	Args  json.RawMessage            `json:"args,omitempty"`
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

type statePart struct {
	Text      string `json:"text,omitempty"`
	ImageData string `json:"imageData,omitempty"`
	ImageMIME string `json:"imageMime,omitempty"`
}

var roleNames = [...]string{llm.RoleUser: "user", llm.RoleAssistant: "assistant", llm.RoleTool: "tool"}

// StateError is a state file that cannot be used; Hint says what to do.
type StateError struct {
	Path string
	Err  error
	Hint string
}

func (e *StateError) Error() string {
	msg := "buzz-agent: read session state " + e.Path + ": " + e.Err.Error()
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *StateError) Unwrap() error { return e.Err }

// errUnknownSession means no state file exists for the id.
var errUnknownSession = errors.New("no such session")

// validSessionID reports whether id is one this agent makes ("ses_" and
// 16 hex digits): anything else could name a path outside the state dir.
func validSessionID(id string) bool {
	hex, ok := strings.CutPrefix(id, "ses_")
	if !ok || len(hex) != 16 {
		return false
	}
	for _, c := range hex {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// maxStateFileBytes is the largest state file read for a history budget
// of historyBytes: JSON escaping may double text, and the system prompt
// and first prompt come on top. save cuts the history until the file
// fits, so every file written can be read back.
func maxStateFileBytes(historyBytes int) int64 {
	return 2*int64(historyBytes) + 2*maxSystemPromptBytes + 2*maxPromptBytes + stateSlackBytes
}

func toState(h []llm.Message) []stateMessage {
	out := make([]stateMessage, 0, len(h))
	for _, m := range h {
		sm := stateMessage{Role: roleNames[m.Role], Text: m.Text, ReasoningDetails: m.ReasoningDetails,
			ReasoningContent: m.ReasoningContent, Thinking: m.Thinking}
		for _, c := range m.Calls {
			sm.Calls = append(sm.Calls, stateCall{ID: c.ID, Name: c.Name, Args: c.Args, Extra: c.Extra})
		}
		for _, im := range m.Images {
			sm.Parts = append(sm.Parts, statePart{ImageData: im.Data, ImageMIME: im.MIME})
		}
		if m.Result != nil {
			sm.CallID, sm.IsError = m.Result.CallID, m.Result.IsError
			for _, p := range m.Result.Parts {
				if p.Image != nil {
					sm.Parts = append(sm.Parts, statePart{ImageData: p.Image.Data, ImageMIME: p.Image.MIME})
				} else {
					sm.Parts = append(sm.Parts, statePart{Text: p.Text})
				}
			}
		}
		out = append(out, sm)
	}
	return out
}

// fromState rebuilds a history, refusing items that break its rules: an
// unknown role, a call without id, a tool result answering no earlier
// call.
func fromState(in []stateMessage) ([]llm.Message, error) {
	out := make([]llm.Message, 0, len(in))
	calls := map[string]bool{}
	for i, sm := range in {
		m := llm.Message{Text: sm.Text, ReasoningDetails: sm.ReasoningDetails, ReasoningContent: sm.ReasoningContent, Thinking: sm.Thinking}
		switch sm.Role {
		case "user":
			m.Role = llm.RoleUser
			for _, p := range sm.Parts {
				if p.ImageData != "" {
					m.Images = append(m.Images, llm.Image{Data: p.ImageData, MIME: p.ImageMIME})
				}
			}
		case "assistant":
			m.Role = llm.RoleAssistant
			for _, c := range sm.Calls {
				if c.ID == "" || c.Name == "" {
					return nil, fmt.Errorf("history item %d: tool call without id or name", i)
				}
				args := c.Args
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				m.Calls = append(m.Calls, llm.ToolCall{ID: c.ID, Name: c.Name, Args: args, Extra: c.Extra})
				calls[c.ID] = true
			}
		case "tool":
			if !calls[sm.CallID] {
				return nil, fmt.Errorf("history item %d: tool result for unknown call %q", i, clip(sm.CallID, markerFieldCap))
			}
			m.Role = llm.RoleTool
			r := &llm.ToolResult{CallID: sm.CallID, IsError: sm.IsError}
			for _, p := range sm.Parts {
				if p.ImageData != "" || p.ImageMIME != "" {
					r.Parts = append(r.Parts, llm.Part{Image: &llm.Image{Data: p.ImageData, MIME: p.ImageMIME}})
				} else {
					r.Parts = append(r.Parts, llm.Part{Text: p.Text})
				}
			}
			m.Result = r
		default:
			return nil, fmt.Errorf("history item %d: unknown role %q", i, clip(sm.Role, markerFieldCap))
		}
		out = append(out, m)
	}
	return out, nil
}

// parseState decodes a state file's bytes and checks them.
func parseState(b []byte) (*stateFile, []llm.Message, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, nil, &StateError{Err: fmt.Errorf("not a state file (%v)", err), Hint: "the file is damaged or truncated; it is skipped, delete it to silence this"}
	}
	if head.Version == nil {
		return nil, nil, &StateError{Err: errors.New("no version field"), Hint: "not written by buzz-agent; move it out of the state dir"}
	}
	if *head.Version != stateVersion {
		return nil, nil, &StateError{Err: fmt.Errorf("version %d is not %d, the one this buzz-agent reads", *head.Version, stateVersion),
			Hint: "run the buzz-agent that wrote it, or move the file away to start that conversation afresh"}
	}
	var sf stateFile
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&sf); err != nil {
		return nil, nil, &StateError{Err: fmt.Errorf("decode: %v", err), Hint: "the file is damaged; it is skipped, delete it to silence this"}
	}
	if !validSessionID(sf.SessionID) {
		return nil, nil, &StateError{Err: fmt.Errorf("session id %q is not one buzz-agent makes", clip(sf.SessionID, markerFieldCap))}
	}
	if !filepath.IsAbs(sf.Cwd) {
		return nil, nil, &StateError{Err: errors.New("cwd is not an absolute path")}
	}
	h, err := fromState(sf.History)
	if err != nil {
		return nil, nil, &StateError{Err: err, Hint: "the file is damaged; it is skipped, delete it to silence this"}
	}
	return &sf, h, nil
}

// readState reads and checks the state file at path, at most limit bytes.
func readState(path string, limit int64) (*stateFile, []llm.Message, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, errUnknownSession
	}
	if err != nil {
		return nil, nil, &StateError{Path: path, Err: err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, &StateError{Path: path, Err: err}
	}
	if int64(len(b)) > limit {
		return nil, nil, &StateError{Path: path, Err: fmt.Errorf("larger than %d bytes", limit),
			Hint: "raise " + envMaxHistoryBytes + " to the value it was written with, or move the file away"}
	}
	sf, h, err := parseState(b)
	if se, ok := err.(*StateError); ok {
		se.Path = path
	}
	return sf, h, err
}

// writeState writes sf to <dir>/<id>.json atomically (statedir.WriteFile).
func writeState(dir string, b []byte, id string) error {
	path := filepath.Join(dir, id+".json")
	if err := statedir.WriteFile(path, b); err != nil {
		return fmt.Errorf("buzz-agent: write session state %s: %w", path, err)
	}
	return nil
}

// encodeState renders sf within limit bytes, dropping the oldest turns
// (as evict does) until it fits; a history that cannot fit at all is
// left out.
func encodeState(sf *stateFile, h []llm.Message, budget int, limit int64) ([]byte, error) {
	for {
		h, _ = evict(h, budget)
		sf.History = toState(h)
		b, err := json.Marshal(sf)
		if err != nil {
			return nil, err
		}
		if int64(len(b)) <= limit {
			return b, nil
		}
		if len(h) == 0 {
			return nil, fmt.Errorf("state of %d bytes exceeds %d even without history", len(b), limit)
		}
		if budget == 0 {
			h = nil
			continue
		}
		budget /= 2
	}
}

// listStates returns the readable sessions in dir, newest first, at most
// maxListedSessions; unreadable files are passed to skip.
func listStates(dir string, limit int64, skip func(error)) []*stateFile {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			skip(&StateError{Path: dir, Err: err})
		}
		return nil
	}
	var out []*stateFile
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() || !validSessionID(id) {
			continue
		}
		if len(out) >= maxListedSessions {
			break
		}
		sf, _, err := readState(filepath.Join(dir, e.Name()), limit)
		if err != nil {
			skip(err)
			continue
		}
		if sf.SessionID != id {
			skip(&StateError{Path: filepath.Join(dir, e.Name()), Err: fmt.Errorf("holds session %s", sf.SessionID)})
			continue
		}
		sf.History = nil // only the header is kept
		out = append(out, sf)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out
}

// title is a session's name in session/list: the first line of its first
// prompt, clipped.
func title(original string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(original), "\n")
	if len(line) > maxTitleBytes {
		return cutHead(line, maxTitleBytes) + "…"
	}
	return line
}

// pruneStates removes the oldest state files of dir beyond keep, by
// modification time, so that a long-lived agent's dir does not grow
// without end; keepID (the session just made) always stays.
func pruneStates(dir string, keep int, keepID string) (removed int, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() || !validSessionID(id) || id == keepID {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // gone meanwhile
		}
		files = append(files, file{e.Name(), info.ModTime()})
	}
	if len(files) < keep {
		return 0, nil
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.After(files[j].mod) })
	for _, f := range files[keep-1:] {
		if os.Remove(filepath.Join(dir, f.name)) == nil {
			removed++
		}
	}
	return removed, nil
}
