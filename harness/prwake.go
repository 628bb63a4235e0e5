package harness

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
)

// Pull requests wake the agent (NIP-34 with NIP-22 comments): a comment or
// a review asking for changes on a pull request the agent opened (the
// comment's root author, P, is the agent), a reply to a comment of the
// agent's (its parent author, p), and a request to review someone else's
// pull request (a comment whose buzz-review-request names the agent).
// Approvals and resolve marks wake no one, nor does anything the agent
// wrote itself or another agent wrote (two agents would answer each other
// for ever; a mention still reaches the agent the usual way). The author
// gate (--respond-to) applies as to messages, in the channel the comment
// carries (h: the repository's channel).
//
// The prompt names the pull request, its head branch and clone URL, the
// file and line, and carries the diff hunk around the line as it was at
// the comment's commit (the relay's buzz-diff), the thread so far, and
// how to push a fix and answer.

// Subscriptions of pull request comments: on the agent's pull requests
// (#P) and answering the agent (#p).
const (
	prRootSub   = "pr-comments"
	prParentSub = "pr-replies"
)

// Why a pull request event wakes the agent (Event.Woken), also its prompt tag.
const (
	wakePRComment     = "pull request comment"
	wakePRReview      = "pull request review"
	wakeReviewRequest = "review request"
)

// Limits of what a pull request prompt carries.
const (
	// prHunkContext is how many diff lines before and after the commented
	// line the prompt shows (within its hunk).
	prHunkContext = 12
	// maxPRDiffBytes bounds the diff read to cut the hunk from.
	maxPRDiffBytes = 4 << 20
	// maxPRThreadShown bounds the earlier comments of the thread shown.
	maxPRThreadShown = 20
	// maxPRThreadRead bounds the comments read to find the thread.
	maxPRThreadRead = 500
	// maxPRCommentChars bounds one earlier comment's text in the prompt.
	maxPRCommentChars = 2000
)

// isPRWake reports whether why is one of the pull request wakes.
func isPRWake(why string) bool {
	return why == wakePRComment || why == wakePRReview || why == wakeReviewRequest
}

// prFilters are the subscriptions' filters.
func prFilters(agent string) map[string]nostr.Filter {
	return map[string]nostr.Filter{
		prRootSub:   {Kinds: []int{workspace.KindComment}, Tags: nostr.TagMap{"P": {agent}}},
		prParentSub: {Kinds: []int{workspace.KindComment}, Tags: nostr.TagMap{"p": {agent}}},
	}
}

// prWake says why comment ev wakes the agent, or "".
func prWake(ev *nostr.Event, agent string) string {
	if ev.Kind != workspace.KindComment || ev.PubKey == agent || tagOf(ev, "K") != strconv.Itoa(workspace.KindPullRequest) {
		return ""
	}
	if ev.Tags.Find(workspace.TagCommentResolved) != nil {
		return ""
	}
	if ev.Tags.FindWithValue(workspace.TagReviewRequest, agent) != nil {
		return wakeReviewRequest
	}
	switch tagOf(ev, workspace.TagReview) {
	case workspace.ReviewApprove:
		return ""
	case workspace.ReviewRequestChanges:
		if tagOf(ev, "P") == agent {
			return wakePRReview
		}
		return ""
	}
	if tagOf(ev, "P") == agent || tagOf(ev, "p") == agent {
		return wakePRComment
	}
	return ""
}

// tagOf is the first value of tag name, or "".
func tagOf(ev *nostr.Event, name string) string {
	if t := ev.Tags.Find(name); len(t) >= 2 {
		return t[1]
	}
	return ""
}

// prEvent takes a comment from the pull request subscriptions into the
// pipeline: it wakes the agent in the comment's channel when prWake says
// so and its author passes the gate.
func (h *harness) prEvent(ctx context.Context, ev *Event) {
	if !h.prSeen.Add(ev.ID) { // both subscriptions carry a reply on the agent's pull request
		return
	}
	why := prWake(&ev.Event, h.cfg.AgentHex)
	if why == "" || h.setup != nil {
		return
	}
	log := h.log.With("event_id", ev.ID, "wake", why)
	ev.Channel = channelOf(&ev.Event)
	if !workspace.IsUUID(ev.Channel) {
		log.Info("pull request comment without a channel; the repository is shared with none, so it wakes no one")
		return
	}
	if !h.allowed(ctx, ev) {
		log.Debug("author not allowed", "author", ev.PubKey)
		return
	}
	if h.isAgent(ctx, ev) {
		log.Debug("another agent's comment; it wakes no agent without a mention", "author", ev.PubKey)
		return
	}
	ev.Woken, ev.Tag = why, why
	log.Info("pull request comment wakes the agent", "channel", ev.Channel)
	h.do(func() { h.accept(ctx, ev) })
}

// prContext is what a pull request prompt says about the pull request a
// comment is on.
type prContext struct {
	ID, Title, Author, Head, Base, Clone, Tip string
	File, Commit                              string
	Line                                      int
	Hunk                                      string   // the diff around the line; "" none
	HunkNote                                  string   // why there is no hunk; "" none
	Thread                                    []string // earlier comments of the thread, oldest first
}

// fetchPRContext reads the pull request comment ev is on, its newest tip,
// the thread ev belongs to and, for a comment on a line, the diff hunk
// around it. What cannot be read is left out; nil when the pull request
// itself cannot be read.
func fetchPRContext(ctx context.Context, io *relayclient.Client, ev *Event, profiles func([]string) map[string]*profile) *prContext {
	prID := tagOf(&ev.Event, "E")
	if !nostr.IsValid32ByteHex(prID) {
		return nil
	}
	evs, err := retryOnce(ctx, contextFetchTO, func(ctx context.Context) ([]*nostr.Event, error) {
		return io.Query(ctx, nostr.Filter{IDs: []string{prID}, Kinds: []int{workspace.KindPullRequest}, Limit: 1},
			nostr.Filter{Kinds: []int{workspace.KindPullRequestUpdate, workspace.KindComment}, Tags: nostr.TagMap{"E": {prID}}, Limit: maxPRThreadRead})
	})
	if err != nil {
		return nil
	}
	var pr *nostr.Event
	comments := map[string]*nostr.Event{}
	var updates []*nostr.Event
	for _, e := range evs {
		switch e.Kind {
		case workspace.KindPullRequest:
			if e.ID == prID {
				pr = e
			}
		case workspace.KindPullRequestUpdate: // the relay takes them from the author and itself only
			if tagOf(e, "E") == prID {
				updates = append(updates, e)
			}
		case workspace.KindComment:
			comments[e.ID] = e
		}
	}
	if pr == nil {
		return nil
	}
	p := &prContext{ID: prID, Title: tagOf(pr, workspace.TagSubject), Author: pr.PubKey, Head: tagOf(pr, workspace.TagBranchName),
		Base: tagOf(pr, workspace.TagPRBase), Clone: tagOf(pr, workspace.TagRepoClone), Tip: tagOf(pr, workspace.TagCommit),
		File: tagOf(&ev.Event, workspace.TagCommentFile), Commit: tagOf(&ev.Event, workspace.TagCommentCommit)}
	if p.Base == "" {
		p.Base = workspace.DefaultProtectedBranch
	}
	sort.Slice(updates, func(i, j int) bool { return updates[i].CreatedAt < updates[j].CreatedAt })
	for _, u := range updates {
		if c := tagOf(u, workspace.TagCommit); c != "" {
			p.Tip = c
		}
	}
	p.Line, _ = strconv.Atoi(tagOf(&ev.Event, workspace.TagCommentLine))

	// The thread: the comments ev answers, up to the one on the pull request.
	var chain []*nostr.Event
	for cur, i := tagOf(&ev.Event, "e"), 0; cur != prID && i < maxPRThreadShown; i++ {
		c := comments[cur]
		if c == nil {
			break
		}
		chain = append(chain, c)
		cur = tagOf(c, "e")
	}
	var keys []string
	for _, c := range chain {
		keys = append(keys, c.PubKey)
	}
	names := profiles(keys)
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		p.Thread = append(p.Thread, fmt.Sprintf("%s (event %s): %s", actor(c.PubKey, names), c.ID, indentLines(truncRunes(c.Content, maxPRCommentChars))))
	}

	if p.File == "" || p.Line <= 0 {
		return p
	}
	owner, name, ok := repoOfPR(pr)
	if !ok {
		p.HunkNote = "the pull request names no repository of this relay"
		return p
	}
	q := url.Values{"pr": {prID}}
	if p.Commit != "" {
		q.Set("commit", p.Commit)
	}
	diff, err := io.Signed(ctx, http.MethodGet, io.Base()+"/git/"+owner+"/"+name+".git/buzz-diff?"+q.Encode(), nil, maxPRDiffBytes)
	if err != nil {
		p.HunkNote = "the diff could not be read: " + err.Error()
		return p
	}
	p.Hunk = hunkAround(string(diff), p.File, p.Line, prHunkContext)
	if p.Hunk == "" {
		p.HunkNote = fmt.Sprintf("line %d of %s is not among the lines the pull request changes", p.Line, p.File)
	}
	return p
}

// repoOfPR reads the hosted repository a pull request's a tag names
// (30617:<relay>:<owner>/<name>).
func repoOfPR(pr *nostr.Event) (owner, name string, ok bool) {
	parts := strings.SplitN(tagOf(pr, "a"), ":", 3)
	if len(parts) != 3 {
		return "", "", false
	}
	owner, name, ok = strings.Cut(parts[2], "/")
	if !ok || !nostr.IsValid32ByteHex(owner) || name == "" || strings.ContainsAny(name, "/?#%") || strings.HasPrefix(name, ".") {
		return "", "", false
	}
	return owner, name, true
}

// hunkAround cuts from a unified diff the lines of file's hunk holding
// new-file line `line`, at most ctxLines either side, the hunk's header
// first and the line marked with "→". "" when the diff does not show it.
func hunkAround(diff, file string, line, ctxLines int) string {
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	inFile := false
	var header string
	var hunk []string // the current hunk's lines
	var at = -1       // index in hunk of the commented line
	next := 0
	flush := func() string {
		if at < 0 {
			return ""
		}
		from, to := max(0, at-ctxLines), min(len(hunk), at+ctxLines+1)
		var b strings.Builder
		b.WriteString(header + "\n")
		for i := from; i < to; i++ {
			mark := "  "
			if i == at {
				mark = "→ "
			}
			b.WriteString(mark + hunk[i] + "\n")
		}
		return strings.TrimRight(b.String(), "\n")
	}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			if s := flush(); s != "" {
				return s
			}
			inFile = strings.HasSuffix(l, " b/"+file)
			hunk, at, header = nil, -1, ""
			continue
		case !inFile:
			continue
		case strings.HasPrefix(l, "@@"):
			if s := flush(); s != "" {
				return s
			}
			hunk, at, header = nil, -1, l
			next = 0
			if _, plus, ok := strings.Cut(l, " +"); ok {
				n, _, _ := strings.Cut(plus, ",")
				n, _, _ = strings.Cut(n, " ")
				next, _ = strconv.Atoi(n)
			}
			continue
		case header == "":
			continue // the file's header lines (---, +++, index)
		}
		hunk = append(hunk, l)
		switch {
		case strings.HasPrefix(l, "-"), strings.HasPrefix(l, "\\"):
		default:
			if next == line {
				at = len(hunk) - 1
			}
			next++
		}
	}
	return flush()
}

// prBlock renders what the prompt says about a pull request event: where
// the comment points, the hunk, the thread, and what to do.
func prBlock(e *Event, p *prContext, agent string) string {
	var b strings.Builder
	b.WriteString("[Pull request]\n")
	fmt.Fprintf(&b, "Pull request: %s", p.ID)
	if p.Title != "" {
		fmt.Fprintf(&b, " %q", p.Title)
	}
	fmt.Fprintf(&b, "\nAuthor: %s\n", map[bool]string{true: "you", false: p.Author}[p.Author == agent])
	fmt.Fprintf(&b, "Branch: %s into %s", p.Head, p.Base)
	if p.Tip != "" {
		fmt.Fprintf(&b, " (tip %s)", p.Tip)
	}
	if p.Clone != "" {
		fmt.Fprintf(&b, "\nClone: %s", p.Clone)
	}
	if p.File != "" {
		fmt.Fprintf(&b, "\nFile: %s", p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, "\nLine: %d", p.Line)
		}
		if p.Commit != "" {
			fmt.Fprintf(&b, "\nCommit: %s", p.Commit)
		}
	}
	if p.Hunk != "" {
		fmt.Fprintf(&b, "\nDiff hunk (the commented line marked →):\n```diff\n%s\n```", p.Hunk)
	} else if p.HunkNote != "" {
		fmt.Fprintf(&b, "\nDiff hunk: none (%s)", p.HunkNote)
	}
	if len(p.Thread) > 0 {
		b.WriteString("\nEarlier in this thread, oldest first:")
		for _, t := range p.Thread {
			b.WriteString("\n- " + t)
		}
	}
	b.WriteString("\n")
	switch e.Woken {
	case wakeReviewRequest:
		fmt.Fprintf(&b, "You are asked to review this pull request. Read it with `buzz pr view --pr %[1]s` and `buzz pr diff --pr %[1]s`; "+
			"comment on lines with `buzz pr comment --pr %[1]s --file PATH --line N --body -`; finish with "+
			"`buzz pr review --pr %[1]s --approve` or `--request-changes`, with a summary in `--body -`.", p.ID)
	default:
		if p.Author == agent {
			fmt.Fprintf(&b, "To change the code: in a clone of the repository (`git clone %s` if you have none), run `buzz pr checkout --pr %s`, "+
				"edit, commit and `git push` (the same branch, %s; the pull request updates itself). ", p.Clone, p.ID, p.Head)
		}
		fmt.Fprintf(&b, "Answer in the thread with `buzz pr comment --pr %s --reply-to %s --body -` (say what you changed, or why not); "+
			"when it is settled, `buzz pr resolve --pr %s --comment %s`.", p.ID, e.ID, p.ID, e.ID)
	}
	return b.String()
}
