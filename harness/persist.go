package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"buzzbox/internal/statedir"
)

// The harness keeps, per relay and agent key, one state file
// (<state dir>/<hash>/state.json): for each channel the ACP session it
// talked in, the events it has taken but not yet answered, the ids of
// the last ones it answered and of the last notices it posted. A restarted
// harness loads the session (session/load, when the agent offers it),
// catches up from the oldest unanswered event, skips what it already
// answered, and asks the relay whether the agent answered the events it
// had taken (a notice is not an answer) before running them. Only the loop
// goroutine touches it; it is written after every loop step that changed
// it (by a goroutine, one write at a time, the loop not waiting), through
// a temporary file renamed over the old one.

// harnessStateVersion is the state file format written and the only one
// read.
const harnessStateVersion = 1

// maxHarnessStateBytes bounds the state file read at start: per channel
// a session id, up to maxQueuePerChannel pending and maxHandledIDs
// answered ids of ~80 bytes, for a few thousand channels.
const maxHarnessStateBytes = 64 << 20

type harnessState struct {
	Version int    `json:"version"`
	Relay   string `json:"relay"`
	Agent   string `json:"agent"`
	// StartedAt is when the last run began listening (unix seconds): a
	// channel with no entry catches up from there.
	StartedAt int64                   `json:"startedAt"`
	Channels  map[string]*channelMemo `json:"channels"`
	// Spend is the agent's usage on the current UTC day, for budgets.
	Spend *daySpendMemo `json:"spend,omitempty"`
	// Paused is set while the owner has the agent paused (pause.go).
	Paused bool `json:"paused,omitempty"`
}

// channelMemo is what the harness remembers of one channel.
type channelMemo struct {
	Session   string           `json:"session,omitempty"`   // ACP session id, "" none
	AgentName string           `json:"agentName,omitempty"` // agentInfo.name of the agent that holds it
	LastAt    int64            `json:"lastAt,omitempty"`    // newest created_at answered
	Pending   map[string]int64 `json:"pending,omitempty"`   // taken, not answered: id -> created_at
	Handled   []string         `json:"handled,omitempty"`   // answered ids, oldest first
	// Notices are the ids of the newest notices the harness posted here
	// as the agent (at most maxSavedNotices), which are not answers.
	Notices []string `json:"notices,omitempty"`

	slot    int             // slot holding Session in this run; -1 none (not saved)
	handled map[string]bool // Handled as a set (not saved)
}

// stateStore is the loop's copy of the state file.
type stateStore struct {
	path  string // "" keeps nothing on disk
	st    harnessState
	prev  int64 // StartedAt of the run before this one; 0 none
	dirty bool
	log   *slog.Logger
	// writing is set while a write runs off the loop (saveBehind); its
	// result arrives on wrote, which the loop selects on.
	writing bool
	wrote   chan error
	// waiting run once the state as it is now is on disk (onSaved);
	// inflight, once the write in flight ends.
	waiting, inflight []func()
	// carried holds, per channel, the events the last run had taken and
	// not answered: it may have ended after the agent's answer went out,
	// so they are checked against the relay before they run (takeCarried).
	carried map[string]map[string]bool
}

// harnessStateDir is where the state of relayURL and agentHex lives: the
// configured dir or the state root's acp/, then a hash of both.
func harnessStateDir(dir string, getenv func(string) string, relayURL, agentHex string) (string, error) {
	if dir == "" {
		root, err := statedir.Root(getenv)
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "acp")
	}
	sum := sha256.Sum256([]byte(relayURL + "\n" + agentHex))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])), nil
}

// openStateStore reads the state at dir/state.json; a missing file is a
// first run, an unreadable one is reported and replaced.
func openStateStore(dir, relayURL, agentHex string, log *slog.Logger) *stateStore {
	s := &stateStore{log: log, wrote: make(chan error, 1), st: harnessState{Version: harnessStateVersion, Relay: relayURL, Agent: agentHex, Channels: map[string]*channelMemo{}}}
	if dir == "" {
		return s
	}
	s.path = filepath.Join(dir, "state.json")
	st, err := readHarnessState(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		log.Warn("harness state unreadable; starting without it (sessions start fresh, catch-up from now)", "path", s.path, "err", err)
	case st.Relay != relayURL || st.Agent != agentHex:
		log.Warn("harness state is for another relay or key; starting without it", "path", s.path)
	default:
		s.st.Channels = st.Channels
		s.st.Spend = st.Spend
		s.st.Paused = st.Paused
		s.prev = st.StartedAt
	}
	s.carried = map[string]map[string]bool{}
	for ch, m := range s.st.Channels {
		m.slot = -1
		m.handled = map[string]bool{}
		for _, id := range m.Handled {
			m.handled[id] = true
		}
		for id := range m.Pending {
			if s.carried[ch] == nil {
				s.carried[ch] = map[string]bool{}
			}
			s.carried[ch][id] = true
		}
	}
	return s
}

// readHarnessState reads and checks a state file.
func readHarnessState(path string) (*harnessState, error) {
	b, err := readCapped(path, maxHarnessStateBytes)
	if err != nil {
		return nil, err
	}
	return parseHarnessState(b)
}

// parseHarnessState decodes a state file's bytes.
func parseHarnessState(b []byte) (*harnessState, error) {
	var st harnessState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("damaged or truncated (%v)", err)
	}
	if st.Version != harnessStateVersion {
		return nil, fmt.Errorf("version %d is not %d, the one this buzz-acp reads; move the file away to start afresh", st.Version, harnessStateVersion)
	}
	for ch, m := range st.Channels {
		if m == nil {
			delete(st.Channels, ch)
			continue
		}
		if len(m.Handled) > maxHandledIDs {
			m.Handled = m.Handled[len(m.Handled)-maxHandledIDs:]
		}
		if len(m.Notices) > maxSavedNotices {
			m.Notices = m.Notices[len(m.Notices)-maxSavedNotices:]
		}
		if len(m.Pending) > maxQueuePerChannel {
			return nil, fmt.Errorf("channel %s: %d pending events, more than %d", ch, len(m.Pending), maxQueuePerChannel)
		}
	}
	if st.Channels == nil {
		st.Channels = map[string]*channelMemo{}
	}
	return &st, nil
}

// memo returns channel's entry, making it.
func (s *stateStore) memo(channel string) *channelMemo {
	m := s.st.Channels[channel]
	if m == nil {
		m = &channelMemo{slot: -1, handled: map[string]bool{}}
		s.st.Channels[channel] = m
	}
	return m
}

// answered reports whether id was answered in channel, in this run or one
// before.
func (s *stateStore) answered(channel, id string) bool {
	m := s.st.Channels[channel]
	return m != nil && m.handled[id]
}

// takeCarried returns the events of evs that the last run had taken and
// not answered, and forgets them as such.
func (s *stateStore) takeCarried(channel string, evs []*Event) []*Event {
	c := s.carried[channel]
	if c == nil {
		return nil
	}
	var out []*Event
	for _, ev := range evs {
		if c[ev.ID] {
			out = append(out, ev)
			delete(c, ev.ID)
		}
	}
	if len(c) == 0 {
		delete(s.carried, channel)
	}
	return out
}

// replayed is called once channel's catch-up has been taken in (got: the
// events it queued): the last run's events it did not queue (answered,
// too old, deleted, past --catchup-max) are no longer waited for, and
// settle.
func (s *stateStore) replayed(channel string, got []*Event) {
	c := s.carried[channel]
	if c == nil {
		return
	}
	back := map[string]bool{}
	for _, ev := range got {
		back[ev.ID] = true
	}
	for id := range c {
		if !back[id] {
			delete(c, id)
		}
	}
	if len(c) == 0 {
		delete(s.carried, channel)
	}
}

// noteNotice records id as a notice the harness posted in channel.
func (s *stateStore) noteNotice(channel, id string) {
	m := s.memo(channel)
	m.Notices = append(m.Notices, id)
	if len(m.Notices) > maxSavedNotices {
		m.Notices = append([]string(nil), m.Notices[len(m.Notices)-maxSavedNotices:]...)
	}
	s.dirty = true
}

// notices returns the notice ids recorded for channel.
func (s *stateStore) notices(channel string) []string {
	if m := s.st.Channels[channel]; m != nil {
		return m.Notices
	}
	return nil
}

// take records id as taken and not yet answered.
func (s *stateStore) take(channel, id string, at int64) {
	m := s.memo(channel)
	if m.Pending == nil {
		m.Pending = map[string]int64{}
	}
	if _, ok := m.Pending[id]; !ok && len(m.Pending) < maxQueuePerChannel {
		m.Pending[id] = at
		s.dirty = true
	}
}

// settle marks every pending id of channel not in live as answered.
func (s *stateStore) settle(channel string, live map[string]bool) {
	m := s.st.Channels[channel]
	if m == nil {
		return
	}
	waiting := s.carried[channel] // the last run's, until its catch-up has had them (replayed)
	for id, at := range m.Pending {
		if live[id] || waiting[id] {
			continue
		}
		delete(m.Pending, id)
		if !m.handled[id] {
			m.handled[id] = true
			m.Handled = append(m.Handled, id)
		}
		m.LastAt = max(m.LastAt, at)
		s.dirty = true
	}
	if n := len(m.Handled) - maxHandledIDs; n > 0 {
		for _, id := range m.Handled[:n] {
			delete(m.handled, id)
		}
		m.Handled = append([]string(nil), m.Handled[n:]...)
	}
}

// holdSession records that slot holds session for channel.
func (s *stateStore) holdSession(channel, session, agentName string, slot int) {
	m := s.memo(channel)
	if m.Session != session || m.AgentName != agentName {
		m.Session, m.AgentName = session, agentName
		s.dirty = true
	}
	m.slot = slot
}

// forgetSession drops channel's session: the next turn starts afresh.
func (s *stateStore) forgetSession(channel string) {
	if m := s.st.Channels[channel]; m != nil && m.Session != "" {
		m.Session, m.AgentName, m.slot = "", "", -1
		s.dirty = true
	}
}

// releaseSlot notes that slot's agent is gone: the sessions it held may
// be loaded by the next agent.
func (s *stateStore) releaseSlot(slot int) {
	for _, m := range s.st.Channels {
		if m.slot == slot {
			m.slot = -1
		}
	}
}

// resumable is the session a turn on slot may load for channel: one no
// other live slot holds, made by an agent of the same name.
func (s *stateStore) resumable(channel string, slot int, agentName string) string {
	m := s.st.Channels[channel]
	if m == nil || m.Session == "" || m.AgentName != agentName || (m.slot >= 0 && m.slot != slot) {
		return ""
	}
	return m.Session
}

// floor is the created_at channel catches up from: its oldest unanswered
// event, else its newest answered one, else the start of the last run;
// never before notBefore, and fallback when nothing is known.
func (s *stateStore) floor(channel string, notBefore, fallback int64) int64 {
	at := int64(0)
	if m := s.st.Channels[channel]; m != nil {
		for _, p := range m.Pending {
			if at == 0 || p < at {
				at = p
			}
		}
		if at == 0 {
			at = m.LastAt
		}
	}
	if at == 0 {
		at = s.prev
	}
	if at == 0 {
		return fallback
	}
	return min(max(at, notBefore), fallback)
}

// save writes the state when it changed; a failure is logged, since the
// harness goes on without it.
func (s *stateStore) save() {
	if !s.dirty || s.path == "" {
		s.ran(&s.waiting)
		return
	}
	s.dirty = false
	b, err := json.Marshal(&s.st)
	if err == nil {
		err = statedir.WriteFile(s.path, b)
	}
	s.saved(err)
	s.ran(&s.waiting)
}

// onSaved runs f (on the loop) once the state as it is now has been
// written, or its write has failed; at once when nothing is kept on disk.
func (s *stateStore) onSaved(f func()) {
	if s.path == "" {
		f()
		return
	}
	s.waiting = append(s.waiting, f)
}

// ran runs and clears the functions in *fs.
func (s *stateStore) ran(fs *[]func()) {
	todo := *fs
	*fs = nil
	for _, f := range todo {
		f()
	}
}

// saveBehind is save for the loop: the file is written and synced by a
// goroutine, so that no event waits behind an fsync (on a busy disk tens
// of milliseconds, once for every step of the loop). Changes made while a
// write runs go out in one write after it, once the loop has taken its
// result from wrote (written).
func (s *stateStore) saveBehind() {
	if s.path == "" || s.writing {
		return
	}
	if !s.dirty {
		s.ran(&s.waiting) // what they wait for is on disk
		return
	}
	s.dirty = false
	b, err := json.Marshal(&s.st)
	if err != nil {
		s.saved(err)
		s.ran(&s.waiting)
		return
	}
	s.inflight, s.waiting = s.waiting, nil
	s.writing = true
	go func() { s.wrote <- statedir.WriteFile(s.path, b) }() // wrote has room: one write at a time
}

// written takes the result of the write saveBehind started.
func (s *stateStore) written(err error) {
	s.writing = false
	s.saved(err)
	s.ran(&s.inflight)
}

// flush waits for a write in flight and writes what changed since; the
// loop calls it as it ends.
func (s *stateStore) flush() {
	if s.writing {
		s.written(<-s.wrote)
	}
	s.save()
}

func (s *stateStore) saved(err error) {
	if err != nil {
		s.log.Warn("harness state not saved; a restart may answer events again or miss some", "path", s.path, "err", err)
	}
}

// started records the start of this run.
func (s *stateStore) started(now time.Time) {
	s.st.StartedAt = now.Unix()
	s.dirty = true
}

// settleState runs after every loop step: events that left their
// channel's queue, parked list and turn are answered (or given up on)
// and recorded as such; then the state is saved if it changed.
func (h *harness) settleState() {
	for ch, m := range h.store.st.Channels {
		if len(m.Pending) == 0 {
			continue
		}
		live := map[string]bool{}
		if cs := h.queues[ch]; cs != nil {
			for _, evs := range [][]*Event{cs.queue, cs.parked} {
				for _, ev := range evs {
					live[ev.ID] = true
				}
			}
			if cs.steering != nil {
				live[cs.steering.ID] = true
			}
			if cs.recheck != nil {
				for _, ev := range cs.recheck.events {
					live[ev.ID] = true
				}
			}
			if t := cs.turn; t != nil {
				for _, evs := range [][]*Event{t.batch, t.parked, t.extra} {
					for _, ev := range evs {
						live[ev.ID] = true
					}
				}
			}
		}
		h.store.settle(ch, live)
	}
	h.store.saveBehind()
}
