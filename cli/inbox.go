package cli

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// inboxScan bounds each of the inbox's queries (mentions, my messages,
// replies, approvals, direct messages).
const inboxScan = 500

// inboxItem is one line of `buzz inbox`: what needs the caller and why.
type inboxItem struct {
	Why     string `json:"why"` // mention, reply, approval, review, dm
	Unread  bool   `json:"unread"`
	Channel string `json:"channel,omitempty"`
	ID      string `json:"id"`
	Author  string `json:"author"`
	At      int64  `json:"created_at"`
	Content string `json:"content"`
}

// runInbox lists what needs the caller, as the web client's inbox does:
// mentions, replies in threads they wrote in, approval requests naming
// them (kind 46010) that nobody answered, pull requests naming them (a p
// tag: the repository's owner, and reviewers asked with `buzz pr create
// --reviewer`) that are open and that they have not reviewed, and
// messages of their direct message channels; unread (after their read
// marker, kind 30078) first, then newest. Approvals and reviews stay
// unread until answered.
func runInbox(in *inv) error {
	me := in.pubkey
	kinds := []int{workspace.KindStream, workspace.KindStreamV2, workspace.KindForumPost, workspace.KindForumComment}
	q := func(f nostr.Filter) ([]*nostr.Event, error) {
		f.Limit = inboxScan
		return in.c.Query(in.ctx, f)
	}
	mentions, err := q(nostr.Filter{Kinds: kinds, Tags: nostr.TagMap{"p": {me}}})
	if err != nil {
		return err
	}
	mine, err := q(nostr.Filter{Kinds: kinds, Authors: []string{me}})
	if err != nil {
		return err
	}
	roots := map[string]bool{}
	for _, ev := range mine {
		roots[inboxRoot(ev, ev.ID)] = true
	}
	var replies []*nostr.Event
	if len(roots) > 0 {
		ids := make([]string, 0, len(roots))
		for id := range roots {
			ids = append(ids, id)
		}
		if replies, err = q(nostr.Filter{Kinds: kinds, Tags: nostr.TagMap{"e": ids}}); err != nil {
			return err
		}
	}
	asks, err := q(nostr.Filter{Kinds: []int{workspace.KindApprovalRequest}, Tags: nostr.TagMap{"p": {me}}})
	if err != nil {
		return err
	}
	var answered map[string]bool
	if len(asks) > 0 {
		ids := make([]string, len(asks))
		for i, a := range asks {
			ids[i] = a.ID
		}
		answers, err := q(nostr.Filter{Kinds: []int{workspace.KindApprovalGrant, workspace.KindApprovalDeny}, Tags: nostr.TagMap{"e": ids}})
		if err != nil {
			return err
		}
		answered = map[string]bool{}
		for _, a := range answers {
			for _, t := range a.Tags {
				if len(t) >= 2 && t[0] == "e" {
					answered[t[1]] = true
				}
			}
		}
	}
	reviews, err := inboxReviews(in, q, me)
	if err != nil {
		return err
	}
	metas, err := q(nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"p": {me}}})
	if err != nil {
		return err
	}
	var dmIDs []string
	if len(metas) > 0 {
		ids := make([]string, 0, len(metas))
		for _, m := range metas {
			ids = append(ids, m.Tags.GetD())
		}
		chans, err := q(nostr.Filter{Kinds: []int{workspace.KindGroupMetadata}, Tags: nostr.TagMap{"d": ids}})
		if err != nil {
			return err
		}
		for _, c := range chans {
			if t := c.Tags.Find(workspace.TagChannelType); t != nil && t[1] == workspace.ChannelTypeDM && !slices.Contains(dmIDs, c.Tags.GetD()) {
				dmIDs = append(dmIDs, c.Tags.GetD())
			}
		}
	}
	var dms []*nostr.Event
	if len(dmIDs) > 0 {
		if dms, err = q(nostr.Filter{Kinds: kinds, Tags: nostr.TagMap{"h": dmIDs}}); err != nil {
			return err
		}
	}
	markers, err := q(nostr.Filter{Kinds: []int{workspace.KindAppData}, Authors: []string{me}})
	if err != nil {
		return err
	}
	read := map[string]int64{} // channel → newest second read
	for _, m := range markers {
		ch, ok := strings.CutPrefix(m.Tags.GetD(), workspace.ReadMarkerPrefix)
		var body struct {
			T int64 `json:"t"`
		}
		if ok && json.Unmarshal([]byte(m.Content), &body) == nil && body.T > read[ch] {
			read[ch] = body.T
		}
	}
	items := []inboxItem{}
	seen := map[string]bool{}
	add := func(why string, ev *nostr.Event) {
		if ev.PubKey == me || seen[ev.ID] {
			return
		}
		seen[ev.ID] = true
		ch := ""
		if t := ev.Tags.Find("h"); t != nil {
			ch = t[1]
		}
		unread := why == "approval" || why == "review" || int64(ev.CreatedAt) > read[ch]
		content := ev.Content
		if why == "review" {
			content = tagValue(ev, "subject")
		}
		items = append(items, inboxItem{Why: why, Unread: unread, Channel: ch, ID: ev.ID, Author: ev.PubKey, At: int64(ev.CreatedAt), Content: content})
	}
	for _, ev := range asks {
		if !answered[ev.ID] {
			add("approval", ev)
		}
	}
	for _, ev := range reviews {
		add("review", ev)
	}
	for _, ev := range dms {
		add("dm", ev)
	}
	for _, ev := range mentions {
		add("mention", ev)
	}
	for _, ev := range replies {
		if roots[inboxRoot(ev, "")] {
			add("reply", ev)
		}
	}
	if in.p.boolean("unread") {
		items = slices.DeleteFunc(items, func(i inboxItem) bool { return !i.Unread })
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].Unread != items[j].Unread {
			return items[i].Unread
		}
		if items[i].At != items[j].At {
			return items[i].At > items[j].At
		}
		return items[i].ID > items[j].ID
	})
	return writeJSON(in.out, items)
}

// inboxRoot is the root an event's e tags name (a root marker, else the
// reply one), or def.
func inboxRoot(ev *nostr.Event, def string) string {
	reply := ""
	for _, t := range ev.Tags {
		if len(t) >= 4 && t[0] == "e" {
			switch t[3] {
			case "root":
				return t[1]
			case "reply":
				reply = t[1]
			}
		}
	}
	if reply != "" {
		return reply
	}
	return def
}

// inboxReviews lists the pull requests naming me (p) or on which I was
// asked for a review (a buzz-review-request comment) that wait for my
// review: not mine, not merged, closed or a draft (the newest status
// says), and without a review (a comment with buzz-review) of mine.
func inboxReviews(in *inv, q func(nostr.Filter) ([]*nostr.Event, error), me string) ([]*nostr.Event, error) {
	prs, err := q(nostr.Filter{Kinds: []int{workspace.KindPullRequest}, Tags: nostr.TagMap{"p": {me}}})
	if err != nil {
		return nil, err
	}
	// and those I was asked to review since (buzz pr request-review: a
	// comment naming me in buzz-review-request).
	asks, err := q(nostr.Filter{Kinds: []int{workspace.KindComment}, Tags: nostr.TagMap{"p": {me}}})
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, pr := range prs {
		have[pr.ID] = true
	}
	var more []string
	for _, c := range asks {
		if id := tagValue(c, "E"); tagValue(c, workspace.TagReviewRequest) == me && nostr.IsValid32ByteHex(id) && !have[id] {
			have[id] = true
			more = append(more, id)
		}
	}
	if len(more) > 0 {
		asked, err := q(nostr.Filter{IDs: more, Kinds: []int{workspace.KindPullRequest}})
		if err != nil {
			return nil, err
		}
		prs = append(prs, asked...)
	}
	if len(prs) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(prs))
	for _, pr := range prs {
		if pr.PubKey != me {
			ids = append(ids, pr.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	statuses, err := q(nostr.Filter{Kinds: []int{workspace.KindStatusOpen, workspace.KindStatusMerged, workspace.KindStatusClosed, workspace.KindStatusDraft}, Tags: nostr.TagMap{"e": ids}})
	if err != nil {
		return nil, err
	}
	newest := map[string]*nostr.Event{}
	for _, st := range statuses {
		id := tagValue(st, "e")
		if n := newest[id]; n == nil || st.CreatedAt >= n.CreatedAt {
			newest[id] = st
		}
	}
	mine, err := q(nostr.Filter{Kinds: []int{workspace.KindComment}, Authors: []string{me}, Tags: nostr.TagMap{"E": ids}})
	if err != nil {
		return nil, err
	}
	reviewed := map[string]bool{}
	for _, c := range mine {
		if c.Tags.Find(workspace.TagReview) != nil {
			reviewed[tagValue(c, "E")] = true
		}
	}
	var out []*nostr.Event
	for _, pr := range prs {
		if pr.PubKey == me || reviewed[pr.ID] {
			continue
		}
		if st := newest[pr.ID]; st != nil && st.Kind != workspace.KindStatusOpen {
			continue
		}
		out = append(out, pr)
	}
	return out, nil
}
