package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/harness/acpclient"
	"buzzbox/internal/acp"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// Asking before acting: an agent's session/request_permission becomes a
// KindApprovalRequest in the thread of the message its turn handles; the
// agent's owner or an admin of that channel answers with a
// KindApprovalGrant or KindApprovalDeny naming one of the options, and
// that answer, checked on its verified signature, is the agent's.
// Silence past --approval-timeout is a rejection with a notice.

// Bounds of a permission request event.
const (
	// maxApprovalDetail bounds the command or diff quoted: a long command
	// line or a screenful of diff, far below a relay's event size.
	maxApprovalDetail = 4 << 10
	// maxApprovalTitle bounds the tool's title, in runes.
	maxApprovalTitle = 200
	// maxApprovalOptions bounds the options listed; ACP agents offer up
	// to four (allow/reject, once/always).
	maxApprovalOptions = 8
	// maxApprovalOptionName bounds an option's label, in runes.
	maxApprovalOptionName = 100
	// maxApprovalChecks bounds the answers being checked at once (each
	// reads the channel's roles from the relay); beyond it an answer is
	// dropped, so a flood of answers cannot pile up goroutines.
	maxApprovalChecks = 8
	// maxPendingApprovals bounds the requests waiting at once; agents ask
	// one at a time per turn, so more means something is wrong.
	maxPendingApprovals = 256
)

// approvalSub is the subscription that hears answers to the agent's
// requests (kinds 46030/46031 p-tagging the agent).
const approvalSub = "approvals"

// approvals is the harness's record of running sessions and waiting
// requests. Any goroutine may use it.
type approvals struct {
	mu      sync.Mutex
	scopes  map[string]approvalScope    // ACP session → its turn
	pending map[string]*pendingApproval // request event id → its waiter
	checks  chan struct{}               // tokens of answers being checked
}

// approvalScope is what a running turn's permission requests belong to.
type approvalScope struct {
	channel string
	ev      *Event // the event the turn handles: the request goes in its thread
}

// pendingApproval is a request waiting for an answer.
type pendingApproval struct {
	channel string
	options []acp.PermissionOption
	answer  chan approvalAnswer // capacity 1; the first valid answer wins
}

// approvalAnswer is an accepted answer: the option and who chose it.
type approvalAnswer struct {
	option, by string
}

func newApprovals() *approvals {
	return &approvals{scopes: map[string]approvalScope{}, pending: map[string]*pendingApproval{},
		checks: make(chan struct{}, maxApprovalChecks)}
}

// bind says that session's requests belong to the turn handling ev.
func (a *approvals) bind(session, channel string, ev *Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.scopes[session] = approvalScope{channel: channel, ev: ev}
}

func (a *approvals) unbind(session string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.scopes, session)
}

func (a *approvals) scope(session string) (approvalScope, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.scopes[session]
	return s, ok
}

func (a *approvals) add(id string, p *pendingApproval) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pending) >= maxPendingApprovals {
		return false
	}
	a.pending[id] = p
	return true
}

func (a *approvals) remove(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, id)
}

func (a *approvals) get(id string) *pendingApproval {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pending[id]
}

// toolCallInfo is what a request shows of the tool call asking.
type toolCallInfo struct {
	title, command, diffPath, diff string
}

// readToolCall pulls the title, the command (rawInput.command, a string or
// an argv) and the first diff out of a permission request's toolCall.
func readToolCall(raw json.RawMessage) toolCallInfo {
	var tc struct {
		Title    string          `json:"title"`
		Kind     string          `json:"kind"`
		RawInput json.RawMessage `json:"rawInput"`
		Content  []struct {
			Type    string  `json:"type"`
			Path    string  `json:"path"`
			OldText *string `json:"oldText"`
			NewText string  `json:"newText"`
		} `json:"content"`
	}
	json.Unmarshal(raw, &tc) // a request without a readable toolCall still asks
	var info toolCallInfo
	info.title = truncRunes(strings.TrimSpace(tc.Title), maxApprovalTitle)
	if info.title == "" {
		info.title = truncRunes(strings.TrimSpace(tc.Kind), maxApprovalTitle)
	}
	var in struct {
		Command json.RawMessage `json:"command"`
		Cmd     json.RawMessage `json:"cmd"`
	}
	if json.Unmarshal(tc.RawInput, &in) == nil {
		for _, c := range []json.RawMessage{in.Command, in.Cmd} {
			var s string
			var argv []string
			switch {
			case json.Unmarshal(c, &s) == nil && s != "":
				info.command = s
			case json.Unmarshal(c, &argv) == nil && len(argv) > 0:
				info.command = strings.Join(argv, " ")
			}
			if info.command != "" {
				break
			}
		}
	}
	for _, c := range tc.Content {
		if c.Type != "diff" {
			continue
		}
		var b strings.Builder
		if c.OldText != nil {
			for _, l := range strings.Split(*c.OldText, "\n") {
				b.WriteString("-" + l + "\n")
			}
		}
		for _, l := range strings.Split(c.NewText, "\n") {
			b.WriteString("+" + l + "\n")
		}
		info.diffPath, info.diff = c.Path, b.String()
		break
	}
	info.command = clipDetail(info.command)
	info.diff = clipDetail(info.diff)
	return info
}

// redacted is info with the values of secret-named variables of environ
// (API keys, tokens) taken out: channel members read the request.
func (info toolCallInfo) redacted(environ []string) toolCallInfo {
	info.title, info.command = redact(info.title, environ), redact(info.command, environ)
	info.diffPath, info.diff = redact(info.diffPath, environ), redact(info.diff, environ)
	return info
}

// clipDetail cuts s to maxApprovalDetail bytes, saying so.
func clipDetail(s string) string {
	if len(s) <= maxApprovalDetail {
		return s
	}
	return truncUTF8Bytes(s, maxApprovalDetail) + "\n… (cut at " + strconv.Itoa(maxApprovalDetail) + " bytes)"
}

// truncUTF8Bytes cuts s to at most n bytes on a character boundary.
func truncUTF8Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// ask is the harness's acpclient.Spec.Ask: it publishes the request in
// the turn's thread and waits for an accepted answer or ctx's end.
func (h *harness) ask(ctx context.Context, req acpclient.PermissionAsk) (string, error) {
	sc, ok := h.approvals.scope(req.SessionID)
	if !ok {
		return "", fmt.Errorf("no turn of this harness runs session %s", req.SessionID)
	}
	if h.cfg.PermissionMode == "bypass-permissions" && req.Rule == "" {
		// The owner chose no asking; only buzz-agent's own approval
		// rules, set for this agent on purpose, still reach a person.
		return "", acpclient.ErrDecideAlone
	}
	log := h.log.With("channel", sc.channel, "session", req.SessionID)
	tc := readToolCall(req.ToolCall).redacted(h.env.Environ)
	expires := time.Now().Add(h.cfg.ApprovalTimeout)
	ev := h.approvalRequest(sc, tc, req, expires)
	if err := h.cfg.Secret.SignEvent(ev); err != nil {
		return "", fmt.Errorf("sign the permission request: %w", err)
	}
	p := &pendingApproval{channel: sc.channel, options: req.Options, answer: make(chan approvalAnswer, 1)}
	if !h.approvals.add(ev.ID, p) {
		return "", errors.New("too many permission requests waiting")
	}
	defer h.approvals.remove(ev.ID)
	pctx, cancel := context.WithTimeout(ctx, httpTimeout)
	_, err := h.io.Publish(pctx, ev)
	cancel()
	if err != nil {
		return "", fmt.Errorf("publish the permission request: %w", err)
	}
	log.Info("permission request waits for a person", "request", ev.ID, "tool", tc.title, "timeout", h.cfg.ApprovalTimeout)
	select {
	case a := <-p.answer:
		log.Info("permission request answered", "request", ev.ID, "option", a.option, "by", a.by)
		h.closeApproval(ev, sc.channel, workspace.ApprovalAnswered, req.Options, a.option, a.by)
		return a.option, nil
	case <-ctx.Done():
	}
	reason := workspace.ApprovalCancelled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = workspace.ApprovalTimeout
	}
	h.closeApproval(ev, sc.channel, reason, req.Options, rejectOf(req.Options), "")
	if reason == workspace.ApprovalTimeout {
		what := tc.title
		if tc.command != "" {
			what = "`" + strings.ReplaceAll(truncRunes(tc.command, 80), "`", "'") + "`"
		}
		text := fmt.Sprintf("⛔ Rejected: nobody answered the request to run %s within %s, so the agent was told no. "+
			"The agent's owner or a channel admin answers such requests in the thread, or with `buzz approvals answer`.", what, sayDuration(h.cfg.ApprovalTimeout))
		h.do(func() {
			if cs := h.queues[sc.channel]; cs != nil {
				h.notice(context.WithoutCancel(ctx), cs, []*Event{sc.ev}, text)
			}
		})
	}
	log.Warn("permission request closed unanswered", "request", ev.ID, "reason", reason)
	return "", ctx.Err()
}

// sayDuration is d as a person says it: "10 minutes", "90 seconds".
func sayDuration(d time.Duration) string {
	switch {
	case d >= time.Minute && d%time.Minute == 0:
		if d == time.Minute {
			return "1 minute"
		}
		return strconv.Itoa(int(d/time.Minute)) + " minutes"
	case d == time.Second:
		return "1 second"
	}
	return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + " seconds"
}

// approvalRequest is the request event for a permission request, in the
// thread of the event the turn handles. It p-tags the owner only: an
// agent named in it would be woken (46010 is a wake kind).
func (h *harness) approvalRequest(sc approvalScope, tc toolCallInfo, req acpclient.PermissionAsk, expires time.Time) *nostr.Event {
	ev := h.threadEvent(sc.channel, sc.ev, "")
	ev.Kind = workspace.KindApprovalRequest
	tags := nostr.Tags{}
	for _, t := range ev.Tags {
		if t[0] != "p" {
			tags = append(tags, t)
		}
	}
	if h.cfg.Owner != "" {
		tags = append(tags, nostr.Tag{"p", h.cfg.Owner})
	}
	title := tc.title
	if title == "" {
		title = "a tool"
	}
	tags = append(tags, nostr.Tag{workspace.TagApprovalTool, title})
	var b strings.Builder
	fmt.Fprintf(&b, "🔐 Permission needed: %s", title)
	if tc.command != "" {
		tags = append(tags, nostr.Tag{workspace.TagApprovalCommand, tc.command})
		fmt.Fprintf(&b, "\n```\n%s\n```", strings.ReplaceAll(tc.command, "```", "'''"))
	}
	if tc.diff != "" {
		tags = append(tags, nostr.Tag{workspace.TagApprovalDiff, tc.diffPath, tc.diff})
		fmt.Fprintf(&b, "\n%s\n```diff\n%s```", tc.diffPath, strings.ReplaceAll(tc.diff, "```", "'''"))
	}
	if req.Rule != "" {
		tags = append(tags, nostr.Tag{workspace.TagApprovalRule, truncRunes(req.Rule, maxApprovalTitle)})
	}
	var names []string
	for i, o := range req.Options {
		if i == maxApprovalOptions {
			break
		}
		name := truncRunes(o.Name, maxApprovalOptionName)
		tags = append(tags, nostr.Tag{workspace.TagApprovalOption, o.OptionID, o.Kind, name})
		names = append(names, name)
	}
	tags = append(tags, nostr.Tag{workspace.TagApprovalExpires, strconv.FormatInt(expires.Unix(), 10)})
	fmt.Fprintf(&b, "\nThe agent's owner or a channel admin may answer (%s); unanswered, it is rejected at %s.",
		strings.Join(names, ", "), expires.UTC().Format("15:04 UTC"))
	ev.Tags = tags
	ev.Content = redact(b.String(), h.env.Environ)
	return ev
}

// closeApproval publishes, as the agent, the answer that closes a request:
// the one a person gave (by), or the rejection of one nobody answered.
// Clients take a request's state from this event alone, since only the
// agent's own answer is known to have been accepted.
func (h *harness) closeApproval(req *nostr.Event, channel, reason string, opts []acp.PermissionOption, option, by string) {
	kind := workspace.KindApprovalDeny
	for _, o := range opts {
		if o.OptionID == option && strings.HasPrefix(o.Kind, "allow_") {
			kind = workspace.KindApprovalGrant
		}
	}
	tags := nostr.Tags{{"h", channel}, {"e", req.ID}, {workspace.TagApprovalReason, reason}}
	if option != "" {
		tags = append(tags, nostr.Tag{workspace.TagApprovalOption, option})
	}
	if by != "" {
		tags = append(tags, nostr.Tag{workspace.TagApprovalBy, by})
	}
	ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Tags: tags}
	if err := h.cfg.Secret.SignEvent(ev); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), httpTimeout)
	defer cancel()
	if _, err := h.io.Publish(ctx, ev); err != nil {
		h.log.Warn("closing answer not published", "request", req.ID, "err", err)
	}
}

// rejectOf is the reject_once option's id, else reject_always's, else "".
func rejectOf(opts []acp.PermissionOption) string {
	for _, want := range []string{"reject_once", "reject_always"} {
		for _, o := range opts {
			if o.Kind == want {
				return o.OptionID
			}
		}
	}
	return ""
}

// approvalAnswer takes a grant or deny heard on approvalSub. The first one
// from the agent's owner or an admin of the request's channel that names
// an offered option of its kind answers the request; any other is ignored.
func (h *harness) approvalAnswer(ctx context.Context, ev *nostr.Event) {
	if ok, _ := ev.CheckSignature(); !ok {
		h.log.Warn("approval answer with a bad signature; ignored", "event_id", ev.ID)
		return
	}
	reqID := ""
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "e" && nostrkey.IsLowerHex(t[1], 64) {
			reqID = t[1]
			break
		}
	}
	p := h.approvals.get(reqID)
	if p == nil {
		return // not ours, or answered already
	}
	log := h.log.With("request", reqID, "from", ev.PubKey)
	if channelOf(ev) != p.channel {
		log.Warn("approval answer for another channel; ignored")
		return
	}
	opt := ""
	if t := ev.Tags.Find(workspace.TagApprovalOption); len(t) >= 2 {
		opt = t[1]
	}
	grant := ev.Kind == workspace.KindApprovalGrant
	var chosen *acp.PermissionOption
	for i, o := range p.options {
		allow := strings.HasPrefix(o.Kind, "allow_")
		if opt == o.OptionID && opt != "" || opt == "" && (grant && o.Kind == "allow_once" || !grant && o.Kind == "reject_once") {
			if allow == grant {
				chosen = &p.options[i]
			}
			break
		}
	}
	if chosen == nil {
		log.Warn("approval answer names no option of its kind the agent offered; ignored", "option", opt, "grant", grant)
		return
	}
	select {
	case h.approvals.checks <- struct{}{}:
	default:
		log.Warn("too many approval answers being checked; this one is dropped")
		return
	}
	go func() { // bounded by contextFetchTO through mayAnswer
		defer func() { <-h.approvals.checks }()
		if !h.mayAnswer(ctx, p.channel, ev.PubKey) {
			log.Warn("approval answer from someone who is neither the agent's owner nor a channel admin; ignored")
			return
		}
		select {
		case p.answer <- approvalAnswer{option: chosen.OptionID, by: ev.PubKey}:
		default: // answered already
		}
	}()
}

// mayAnswer reports whether pubkey may answer the agent's requests in
// channel: the agent's owner, or an owner or admin of the channel by the
// relay's member list (39002), read now.
func (h *harness) mayAnswer(ctx context.Context, channel, pubkey string) bool {
	if h.cfg.Owner != "" && pubkey == h.cfg.Owner {
		return true
	}
	evs, err := retryOnce(ctx, contextFetchTO, func(ctx context.Context) ([]*nostr.Event, error) {
		return h.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"d": {channel}}, Limit: 1})
	})
	if err != nil || len(evs) == 0 {
		return false
	}
	sortEvents(evs)
	for _, t := range evs[len(evs)-1].Tags {
		if len(t) >= 4 && t[0] == "p" && t[1] == pubkey {
			return t[3] == "owner" || t[3] == "admin"
		}
	}
	return false
}
