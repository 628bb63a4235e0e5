package harness

import (
	"context"
	"strconv"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
)

// The reply guard. Agents answer through the buzz CLI; one that answers in
// its session text instead, or whose shell cannot run the CLI, leaves the
// person waiting with nothing (upstream's most reported failure). At the
// end of a turn started by a mention or a DM the harness asks the relay
// for the agent's messages in the channel since the turn began. Finding
// none, it posts the turn's final text as the agent's reply, or, with no
// text, a notice that the agent finished without answering.
// --post-final-text=false turns this off.

// noAnswerNotice is posted when a guarded turn left neither a message nor
// any text.
const noAnswerNotice = "⚠️ I finished working on this but wrote no answer. Please ask again or rephrase."

// cutNote ends a final text cut at maxFinalText.
const cutNote = "\n\n[… the rest of this answer was cut]"

// guardReply checks the thread of t's batch in the background (bounded by
// replyCheckTO per relay call; shutdown waits for it through h.pubs).
func (h *harness) guardReply(ctx context.Context, channel string, t *turnHandle, out turnOutcome) {
	batch := append(append([]*Event{}, t.parked...), t.batch...)
	if len(batch) == 0 {
		return
	}
	last := batch[len(batch)-1]
	since := nostr.Timestamp(t.startedAt.Unix())
	h.pubs.Add(1)
	if isPRWake(last.Woken) {
		go func() { // one query and at most one publish, each bounded by replyCheckTO
			defer h.pubs.Done()
			h.guardPRReply(context.WithoutCancel(ctx), last, since, out)
		}()
		return
	}
	go func() {
		defer h.pubs.Done()
		bctx := context.WithoutCancel(ctx)
		msgs, err := h.agentMessages(bctx, channel, since)
		if err != nil {
			// Unknown is not "none": posting could duplicate a reply.
			h.log.Warn("reply guard: could not read the thread; not posting", "channel", channel, "err", err)
			return
		}
		msgs = answersTo(msgs, batch)
		if len(msgs) > 0 {
			h.log.Info("reply guard: the agent answered in the channel", "channel", channel, "event_id", last.ID, "reply_id", msgs[0].ID)
			return
		}
		h.log.Info("reply guard: the agent left no message in the thread; posting its final text", "channel", channel,
			"event_id", last.ID, "text_bytes", len(out.finalText))
		h.postGuardReply(bctx, h.threadEvent(channel, last, out.replyText()), "channel", channel)
	}()
}

// agentMessages asks the relay (within replyCheckTO) for what counts as
// the agent's answers in channel since since: its messages there (kinds 9
// and 40002), less the notices the harness itself posted as the agent.
// The reply guard takes any of them as the turn's answer; the check
// before a failed turn's re-run (answeredIDs) takes each as the answer to
// the event it replies to.
func (h *harness) agentMessages(ctx context.Context, channel string, since nostr.Timestamp) ([]*nostr.Event, error) {
	qctx, cancel := context.WithTimeout(ctx, replyCheckTO)
	defer cancel()
	evs, err := h.io.Query(qctx, nostr.Filter{Kinds: []int{workspace.KindStream, workspace.KindStreamV2}, Authors: []string{h.cfg.AgentHex},
		Tags: nostr.TagMap{"h": {channel}}, Since: &since})
	if err != nil {
		return nil, err
	}
	own := h.ownNotices.snapshot()
	out := evs[:0]
	for _, ev := range evs {
		if !own[ev.ID] {
			out = append(out, ev)
		}
	}
	return out, nil
}

// answersTo keeps the messages of msgs that may answer batch: those in
// no thread, and replies to one of batch's events or to the root of the
// thread one is in. Since is in seconds, so the answer to the turn before, posted
// in the second this turn began, is among msgs; it replies to another
// event and is not this turn's answer.
func answersTo(msgs []*nostr.Event, batch []*Event) []*nostr.Event {
	ours := map[string]bool{}
	for _, e := range batch {
		ours[e.ID] = true
		if root, _ := e.thread(); root != "" {
			ours[root] = true
		}
	}
	var out []*nostr.Event
	for _, m := range msgs {
		if _, parent := (&Event{Event: *m}).thread(); parent == "" || ours[parent] {
			out = append(out, m)
		}
	}
	return out
}

// answeredIDs reports which events of batch one of msgs (agentMessages)
// replies to: names as its thread parent.
func answeredIDs(msgs []*nostr.Event, batch []*Event) map[string]bool {
	want := map[string]bool{}
	for _, e := range batch {
		want[e.ID] = true
	}
	got := map[string]bool{}
	for _, m := range msgs {
		if _, parent := (&Event{Event: *m}).thread(); want[parent] {
			got[parent] = true
		}
	}
	return got
}

// threadEvent is an unsigned kind 9 replying to last in its thread, with
// secret values cut out of text.
func (h *harness) threadEvent(channel string, last *Event, text string) *nostr.Event {
	root, _ := last.thread()
	tags := nostr.Tags{{"h", channel}}
	if root != "" && root != last.ID {
		tags = append(tags, nostr.Tag{"e", root, "", "root"})
	}
	tags = append(tags, nostr.Tag{"e", last.ID, "", "reply"}, nostr.Tag{"p", last.PubKey})
	return &nostr.Event{Kind: workspace.KindStream, CreatedAt: nostr.Now(), Tags: tags, Content: redact(text, h.env.Environ)}
}

// guardPRReply is the reply guard of a turn a pull request comment
// started: the agent answers on the pull request, in the comment's thread
// (a kind 1111 of its answering the comment since the turn began);
// finding none, the turn's final text, or the notice, is posted as that
// reply.
func (h *harness) guardPRReply(ctx context.Context, last *Event, since nostr.Timestamp, out turnOutcome) {
	qctx, cancel := context.WithTimeout(ctx, replyCheckTO)
	evs, err := h.io.Query(qctx, nostr.Filter{Kinds: []int{workspace.KindComment}, Authors: []string{h.cfg.AgentHex},
		Tags: nostr.TagMap{"e": {last.ID}}, Since: &since, Limit: 1})
	cancel()
	if err != nil {
		h.log.Warn("reply guard: could not read the pull request's comments; not posting", "event_id", last.ID, "err", err)
		return
	}
	if len(evs) > 0 {
		h.log.Info("reply guard: the agent answered on the pull request", "event_id", last.ID, "reply_id", evs[0].ID)
		return
	}
	tags := nostr.Tags{}
	for _, name := range []string{"E", "K", "P", "h", workspace.TagCommentFile, workspace.TagCommentLine, workspace.TagCommentCommit} {
		if t := last.Tags.Find(name); t != nil {
			tags = append(tags, t)
		}
	}
	tags = append(tags, nostr.Tag{"e", last.ID, "", last.PubKey}, nostr.Tag{"k", strconv.Itoa(last.Kind)}, nostr.Tag{"p", last.PubKey})
	ev := &nostr.Event{Kind: workspace.KindComment, CreatedAt: nostr.Now(), Tags: tags, Content: redact(out.replyText(), h.env.Environ)}
	h.log.Info("reply guard: the agent left no answer on the pull request; posting its final text", "event_id", last.ID)
	h.postGuardReply(ctx, ev, "event_id", last.ID)
}

// replyText is what the reply guard posts for a turn that left no
// answer: its final text, marked where it was cut, or the notice.
func (out turnOutcome) replyText() string {
	switch {
	case out.finalText == "":
		return noAnswerNotice
	case out.textCut:
		return out.finalText + cutNote
	}
	return out.finalText
}

// postGuardReply signs ev as the agent and publishes it within
// replyCheckTO; where is what the warning of a failed publish names.
func (h *harness) postGuardReply(ctx context.Context, ev *nostr.Event, where ...any) {
	if err := h.cfg.Secret.SignEvent(ev); err != nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, replyCheckTO)
	defer cancel()
	if _, err := h.io.Publish(pctx, ev); err != nil {
		h.log.Warn("reply guard: final text not published", append(where, "err", err)...)
	}
}

// noticeIDs remembers the ids of notices the harness posted as the agent,
// so that the reply guard does not take one for the agent's answer.
type noticeIDs struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (n *noticeIDs) add(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ids == nil || len(n.ids) >= maxNoticeIDs {
		n.ids = map[string]bool{}
	}
	n.ids[id] = true
}

func (n *noticeIDs) snapshot() map[string]bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := make(map[string]bool, len(n.ids))
	for k := range n.ids {
		m[k] = true
	}
	return m
}
