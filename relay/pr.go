package relay

import (
	"context"
	"sort"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nipoa"
)

// Pull requests on hosted repositories (NIP-34 kind 1618) and what the
// relay checks of them and their kin:
//
//   - a pull request, update (1619) or status (1630–1633) naming a hosted
//     repository's address is taken only from someone who may read the
//     repository, and, when the repository is shared with a channel, only
//     with that channel's h tag, so the channel's read rules cover it;
//   - an update comes from the pull request's author (or the relay, which
//     publishes one when a push moves the head branch);
//   - open, closed and draft statuses come from the author or someone who
//     may push to the repository;
//   - a merged status (1631) comes from someone who may push, and its
//     merge-commit must be on the base branch with the pull request's tip
//     in its history: only a merge that happened can be announced.
//
// Reviews are NIP-22 comments (1111) whose root is the pull request, with
// buzz-review approve or request-changes; reviewRules says which count.

// prState is what the relay knows of one pull request.
type prState struct {
	ev     *nostr.Event
	rt     gitRoute
	base   string // branch it merges into
	head   string // branch-name
	tip    string // newest c: the pull request's, or its newest update's
	status int    // newest status kind, 0 for none (open)
}

// loadPR reads pull request id and its newest update and status.
func (r *Relay) loadPR(ctx context.Context, id string) (*prState, bool) {
	ctx = internal(ctx)
	ev := r.firstStored(ctx, nostr.Filter{IDs: []string{id}, Kinds: []int{workspace.KindPullRequest}, Limit: 1})
	if ev == nil {
		return nil, false
	}
	rt, ok := r.repoOfEvent(ev)
	if !ok {
		return nil, false
	}
	p := &prState{ev: ev, rt: rt, base: workspace.DefaultProtectedBranch}
	if v, ok := tagValue(ev, workspace.TagPRBase); ok && v != "" {
		p.base = v
	}
	p.head, _ = tagValue(ev, workspace.TagBranchName)
	p.tip, _ = tagValue(ev, workspace.TagCommit)
	var newest nostr.Timestamp
	r.eachStored(ctx, nostr.Filter{Kinds: []int{workspace.KindPullRequestUpdate}, Tags: nostr.TagMap{"E": {id}}}, func(u *nostr.Event) {
		if (u.PubKey == ev.PubKey || u.PubKey == r.pubkey) && u.CreatedAt >= newest {
			if c, ok := tagValue(u, workspace.TagCommit); ok {
				newest, p.tip = u.CreatedAt, c
			}
		}
	})
	newest = 0
	r.eachStored(ctx, nostr.Filter{Kinds: statusKinds(), Tags: nostr.TagMap{"e": {id}}}, func(s *nostr.Event) {
		if s.CreatedAt >= newest && (s.PubKey == ev.PubKey || r.gitAllowed(ctx, caller{pubkey: s.PubKey}, rt, true)) {
			newest, p.status = s.CreatedAt, s.Kind
		}
	})
	return p, true
}

func statusKinds() []int {
	return []int{workspace.KindStatusOpen, workspace.KindStatusMerged, workspace.KindStatusClosed, workspace.KindStatusDraft}
}

func isStatusKind(k int) bool {
	return k >= workspace.KindStatusOpen && k <= workspace.KindStatusDraft
}

// checkRepoEvent is the write check of pull requests, updates and
// statuses on hosted repositories.
func (r *Relay) checkRepoEvent(ctx context.Context, c caller, ev *nostr.Event) string {
	if !repoKind(ev.Kind) || ev.Kind == workspace.KindRepoAnnouncement || ev.Kind == workspace.KindRepoState {
		return ""
	}
	rt, ok := r.repoOfEvent(ev)
	if !ok {
		return ""
	}
	if !r.gitAllowed(ctx, c, rt, false) {
		return "restricted: no repository " + repoD(rt) + " you may read"
	}
	if ch := r.repoChannel(ctx, rt); ch != "" {
		if v, _ := tagValue(ev, "h"); v != ch {
			return "invalid: repository " + repoD(rt) + " is shared with channel " + ch + "; its pull requests carry h " + ch
		}
	}
	if ev.Kind == workspace.KindPullRequest {
		return ""
	}
	id := ""
	if ev.Kind == workspace.KindPullRequestUpdate {
		id, _ = tagValue(ev, "E")
	} else {
		id, _ = tagValue(ev, "e") // NIP-34: ["e", <pull request>, "", "root"] first
	}
	p, ok := r.loadPR(ctx, id)
	if !ok || repoD(p.rt) != repoD(rt) {
		return "invalid: no pull request " + id + " on " + repoD(rt)
	}
	pusher := r.gitAllowed(ctx, c, rt, true)
	switch {
	case ev.Kind == workspace.KindPullRequestUpdate:
		if ev.PubKey != p.ev.PubKey {
			return "restricted: only the pull request's author updates it"
		}
	case ev.Kind == workspace.KindStatusMerged:
		if !pusher {
			return "restricted: only those who may push to " + repoD(rt) + " mark a pull request merged"
		}
		mc, _ := tagValue(ev, workspace.TagMergeCommit)
		if !isObjectID(mc) {
			return "invalid: a merged status names its merge-commit (40 hex)"
		}
		if !r.isAncestor(ctx, rt, mc, "refs/heads/"+p.base) || !r.isAncestor(ctx, rt, p.tip, mc) {
			return "invalid: commit " + mc + " is not a merge of this pull request into " + p.base + "; merge with buzz pr merge"
		}
	case isStatusKind(ev.Kind):
		if ev.PubKey != p.ev.PubKey && !pusher {
			return "restricted: only the pull request's author or those who may push to " + repoD(rt) + " change its status"
		}
	}
	return ""
}

// isObjectID reports whether s is a git object id (SHA-1, lower-case hex).
func isObjectID(s string) bool {
	if len(s) != len(zeroID) {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isAncestor reports whether commit a is in the history of b.
func (r *Relay) isAncestor(ctx context.Context, rt gitRoute, a, b string) bool {
	if !isObjectID(a) || strings.HasPrefix(b, "-") {
		return false
	}
	_, err := r.gitIn(ctx, rt, nil, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// isAgent reports whether pk is an agent: its profile carries an owner
// attestation (NIP-OA), or a channel gives it the bot role.
func (r *Relay) isAgent(ctx context.Context, pk string) bool {
	prof := r.firstStored(internal(ctx), nostr.Filter{Kinds: []int{workspace.KindProfile}, Authors: []string{pk}, Limit: 1})
	if prof != nil && prof.Tags.Find(nipoa.TagName) != nil {
		return true
	}
	r.chans.mu.RLock()
	defer r.chans.mu.RUnlock()
	for _, ch := range r.chans.byID {
		if ch.members[pk] == roleBot {
			return true
		}
	}
	return false
}

// reviewVerdict is what the reviews of a pull request allow.
type reviewVerdict struct {
	approvedBy []string // reviewers whose approval counts
	blockedBy  []string // reviewers whose newest verdict asks for changes
	ignored    []string // approvals that do not count, with why
}

// reviewRules applies the review rules to pull request p: each reviewer's
// newest verdict counts; an approval counts when its author may push to
// the repository, is not the pull request's author, and, for an agent's
// pull request, is no agent; a request for changes from anyone who may
// push blocks until that reviewer approves.
func (r *Relay) reviewRules(ctx context.Context, p *prState) reviewVerdict {
	newest := map[string]*nostr.Event{}
	r.eachStored(internal(ctx), nostr.Filter{Kinds: []int{workspace.KindComment}, Tags: nostr.TagMap{"E": {p.ev.ID}}}, func(ev *nostr.Event) {
		v, ok := tagValue(ev, workspace.TagReview)
		if !ok || (v != workspace.ReviewApprove && v != workspace.ReviewRequestChanges) {
			return
		}
		if old := newest[ev.PubKey]; old == nil || ev.CreatedAt >= old.CreatedAt {
			newest[ev.PubKey] = ev
		}
	})
	authorIsAgent := r.isAgent(ctx, p.ev.PubKey)
	var out reviewVerdict
	pks := make([]string, 0, len(newest))
	for pk := range newest {
		pks = append(pks, pk)
	}
	sort.Strings(pks)
	for _, pk := range pks {
		v, _ := tagValue(newest[pk], workspace.TagReview)
		if !r.gitAllowed(ctx, caller{pubkey: pk}, p.rt, true) {
			out.ignored = append(out.ignored, pk+" (may not push)")
			continue
		}
		switch {
		case v == workspace.ReviewRequestChanges:
			out.blockedBy = append(out.blockedBy, pk)
		case pk == p.ev.PubKey:
			out.ignored = append(out.ignored, pk+" (the author)")
		case authorIsAgent && r.isAgent(ctx, pk):
			out.ignored = append(out.ignored, pk+" (an agent; an agent's pull request needs a person's approval)")
		default:
			out.approvedBy = append(out.approvedBy, pk)
		}
	}
	return out
}

// updatePullRequests publishes a 1619 for each open pull request on rt
// whose head branch moved past its last known tip.
func (r *Relay) updatePullRequests(ctx context.Context, rt gitRoute) {
	refs, _, err := r.repoRefs(ctx, rt)
	if err != nil {
		return
	}
	// By p (the owner), not a: the store indexes tag values of at most
	// 100 bytes, and an address with a d of owner/name is longer.
	var prs []*nostr.Event
	r.eachStored(internal(ctx), nostr.Filter{Kinds: []int{workspace.KindPullRequest}, Tags: nostr.TagMap{"p": {rt.owner}}}, func(ev *nostr.Event) {
		if got, ok := r.repoOfEvent(ev); ok && repoD(got) == repoD(rt) && len(prs) < maxPRScan {
			prs = append(prs, ev)
		}
	})
	for _, ev := range prs {
		p, ok := r.loadPR(ctx, ev.ID)
		if !ok || p.head == "" || p.status == workspace.KindStatusMerged || p.status == workspace.KindStatusClosed {
			continue
		}
		now := refs["refs/heads/"+p.head]
		if now == "" || now == p.tip {
			continue
		}
		tags := nostr.Tags{{"a", r.repoAddress(rt)}, {"p", rt.owner}, {"E", ev.ID}, {"P", ev.PubKey}, {workspace.TagCommit, now}}
		if clone := ev.Tags.Find(workspace.TagRepoClone); clone != nil {
			tags = append(tags, clone)
		}
		if h, ok := tagValue(ev, "h"); ok {
			tags = append(tags, nostr.Tag{"h", h})
		}
		if mb, err := r.gitIn(ctx, rt, nil, "merge-base", "refs/heads/"+p.base, now); err == nil {
			tags = append(tags, nostr.Tag{workspace.TagMergeBase, strings.TrimSpace(mb)})
		}
		r.publishRelayEvent(ctx, workspace.KindPullRequestUpdate, tags)
		r.log.Info("pull request updated", "pr", ev.ID, "tip", now)
	}
}
