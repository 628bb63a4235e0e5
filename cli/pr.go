package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
)

// Pull requests on repositories the relay hosts (NIP-34): the relay
// announces each repository (30617) and its refs (30618) under its own key
// with d = "<owner hex>/<name>"; a pull request (1618) names that
// announcement in its a tag, its head branch in branch-name, its tip in c
// and its base in buzz-base, and carries the repository's channel as h.
// Comments and reviews are NIP-22 (1111) with the pull request as root;
// statuses are 1630–1633. Merging asks the relay's git (POST
// <repo>.git/buzz-merge), then publishes the 1631 under the merger's key.

// Limits of the pr commands.
const (
	// maxPRBody bounds a pull request description or comment read from
	// stdin or a flag.
	maxPRBody = 64 << 10
	// maxPRListed bounds the pull requests list reads.
	maxPRListed = 200
	// maxPRThread bounds the comments, updates and statuses view reads.
	maxPRThread = 500
	// maxDiffRead bounds the diff the relay sends that diff prints.
	maxDiffRead = 16 << 20
)

// repoRef is a hosted repository as the relay announces it.
type repoRef struct {
	owner, name string
	ann, state  *nostr.Event // the relay's 30617 and 30618
}

func (r repoRef) d() string { return r.owner + "/" + r.name }

func (r repoRef) address() string {
	return fmt.Sprintf("%d:%s:%s", workspace.KindRepoAnnouncement, r.ann.PubKey, r.d())
}

// relayPubkey reads the relay's key from its NIP-11 document: the relay's
// NIP-34 events are the ones it signs, whoever else uses the same d.
func relayPubkey(in *inv) (string, error) {
	req, err := http.NewRequestWithContext(in.ctx, http.MethodGet, in.c.Base(), nil)
	if err != nil {
		return "", otherErr("relay info: %v", err)
	}
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := in.c.HTTPClient().Do(req)
	if err != nil {
		return "", &Error{Category: catNetwork, Message: "relay info: " + err.Error(), Retryable: true}
	}
	defer resp.Body.Close()
	var doc struct {
		PubKey string `json:"pubkey"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&doc); err != nil || !nostr.IsValid32ByteHex(doc.PubKey) {
		return "", &Error{Category: catRelay, Message: "relay info names no pubkey; pull requests need a relay that hosts git (buzz-relay)"}
	}
	return doc.PubKey, nil
}

// needRepo resolves --repo OWNER/NAME (owner as hex or npub) to the
// relay's announcement and state.
func needRepo(in *inv) (repoRef, error) {
	v, err := need(in, "repo")
	if err != nil {
		return repoRef{}, err
	}
	o, n, ok := strings.Cut(strings.TrimSuffix(v, ".git"), "/")
	if !ok || n == "" {
		return repoRef{}, userErr("--repo must be OWNER/NAME (owner hex or npub), got %q", v)
	}
	owner, err := parsePubkey(o)
	if err != nil {
		return repoRef{}, err
	}
	return loadRepo(in, owner, n)
}

func loadRepo(in *inv, owner, name string) (repoRef, error) {
	rp, err := relayPubkey(in)
	if err != nil {
		return repoRef{}, err
	}
	r := repoRef{owner: owner, name: name}
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindRepoAnnouncement, workspace.KindRepoState},
		Authors: []string{rp}, Tags: nostr.TagMap{"d": {r.d()}}})
	if err != nil {
		return repoRef{}, err
	}
	for _, ev := range evs {
		if ev.Tags.GetD() != r.d() {
			continue
		}
		switch {
		case ev.Kind == workspace.KindRepoAnnouncement && (r.ann == nil || ev.CreatedAt > r.ann.CreatedAt):
			r.ann = ev
		case ev.Kind == workspace.KindRepoState && (r.state == nil || ev.CreatedAt > r.state.CreatedAt):
			r.state = ev
		}
	}
	if r.ann == nil {
		return repoRef{}, notFound("no repository %s on this relay that you may read; push it first (git push %s/git/%s/%s.git main)", r.d(), in.c.Base(), owner, name)
	}
	return r, nil
}

// needPR fetches --pr ID and its repository.
func needPR(in *inv) (*nostr.Event, repoRef, error) {
	v, err := need(in, "pr")
	if err != nil {
		return nil, repoRef{}, err
	}
	id, err := parseHexID(v)
	if err != nil {
		return nil, repoRef{}, err
	}
	evs, err := in.c.Query(in.ctx, nostr.Filter{IDs: []string{id}, Kinds: []int{workspace.KindPullRequest}, Limit: 1})
	if err != nil {
		return nil, repoRef{}, err
	}
	if len(evs) == 0 {
		return nil, repoRef{}, notFound("pull request %s not found", id)
	}
	pr := evs[0]
	a := tagValue(pr, "a")
	parts := strings.SplitN(a, ":", 3)
	if len(parts) != 3 {
		return nil, repoRef{}, otherErr("pull request %s names no repository (a tag %q)", id, a)
	}
	o, n, _ := strings.Cut(parts[2], "/")
	r, err := loadRepo(in, o, n)
	return pr, r, err
}

// prTags are the tags every event about pr's repository carries.
func repoTags(r repoRef) nostr.Tags {
	tags := nostr.Tags{{"a", r.address()}, {"p", r.owner}}
	if t := r.ann.Tags.Find("r"); t != nil {
		tags = append(tags, t)
	}
	if h := tagValue(r.ann, "h"); h != "" {
		tags = append(tags, nostr.Tag{"h", h})
	}
	return tags
}

func runPRCreate(in *inv) error {
	r, err := needRepo(in)
	if err != nil {
		return err
	}
	head, err := need(in, "head")
	if err != nil {
		return err
	}
	base := workspace.DefaultProtectedBranch
	if in.p.has("base") {
		base = in.p.str("base")
	}
	title, err := need(in, "title")
	if err != nil {
		return err
	}
	body, err := prBody(in, "")
	if err != nil {
		return err
	}
	tip := ""
	if r.state != nil {
		tip = tagValue(r.state, "refs/heads/"+head)
	}
	if tip == "" {
		return userErr("branch %s is not in %s; push it first: git push %s %s", head, r.d(), tagValue(r.ann, workspace.TagRepoClone), head)
	}
	ev := &nostr.Event{Kind: workspace.KindPullRequest, Content: body, Tags: repoTags(r)}
	ev.Tags = append(ev.Tags, nostr.Tag{workspace.TagSubject, title}, nostr.Tag{workspace.TagCommit, tip},
		nostr.Tag{workspace.TagBranchName, head}, nostr.Tag{workspace.TagPRBase, base})
	if clone := r.ann.Tags.Find(workspace.TagRepoClone); clone != nil {
		ev.Tags = append(ev.Tags, clone)
	}
	for _, l := range in.p.list("label") {
		ev.Tags = append(ev.Tags, nostr.Tag{"t", l})
	}
	for _, who := range in.p.list("reviewer") {
		pk, err := resolveAuthor(in, who)
		if err != nil {
			return err
		}
		if ev.Tags.FindWithValue("p", pk) == nil {
			ev.Tags = append(ev.Tags, nostr.Tag{"p", pk})
		}
	}
	res, err := signAndPublish(in, ev)
	if err != nil {
		return err
	}
	if !res.Accepted {
		return &Error{Category: catRelay, Message: "pull request refused: " + res.Message}
	}
	if in.p.boolean("draft") {
		if _, err := publishStatus(in, ev, r, workspace.KindStatusDraft, ""); err != nil {
			return err
		}
	}
	return writeJSON(in.out, map[string]any{"id": ev.ID, "repo": r.d(), "head": head, "base": base, "tip": tip,
		"draft": in.p.boolean("draft")})
}

// publishStatus publishes a NIP-34 status of kind k on pr.
func publishStatus(in *inv, pr *nostr.Event, r repoRef, k int, content string, extra ...nostr.Tag) (relayclient.Result, error) {
	ev := &nostr.Event{Kind: k, Content: content, Tags: nostr.Tags{{"e", pr.ID, "", "root"}}}
	for _, t := range repoTags(r) {
		if t[0] != "p" {
			ev.Tags = append(ev.Tags, t)
		}
	}
	ev.Tags = append(ev.Tags, nostr.Tag{"p", r.owner}, nostr.Tag{"p", pr.PubKey})
	ev.Tags = append(ev.Tags, extra...)
	res, err := signAndPublish(in, ev)
	if err == nil && !res.Accepted {
		return res, &Error{Category: catRelay, Message: "status refused: " + res.Message}
	}
	return res, err
}

// prInfo is a pull request as list and view print it.
type prInfo struct {
	ID        string `json:"id"`
	Repo      string `json:"repo"`
	Author    string `json:"author"`
	Title     string `json:"title"`
	Head      string `json:"head"`
	Base      string `json:"base"`
	Tip       string `json:"tip"`
	Status    string `json:"status"`
	Channel   string `json:"channel,omitempty"`
	CreatedAt int64  `json:"created_at"`
	Body      string `json:"body,omitempty"`
}

func statusName(k int) string {
	switch k {
	case workspace.KindStatusMerged:
		return "merged"
	case workspace.KindStatusClosed:
		return "closed"
	case workspace.KindStatusDraft:
		return "draft"
	}
	return "open"
}

func statusKinds() []int {
	return []int{workspace.KindStatusOpen, workspace.KindStatusMerged, workspace.KindStatusClosed, workspace.KindStatusDraft}
}

// describePR sums up pr from its updates and statuses among thread. The
// newest status counts (the relay takes statuses only from the author
// and those who may push).
func describePR(pr *nostr.Event, r repoRef, thread []*nostr.Event) prInfo {
	p := prInfo{ID: pr.ID, Repo: r.d(), Author: pr.PubKey, Title: tagValue(pr, workspace.TagSubject), Head: tagValue(pr, workspace.TagBranchName),
		Base: tagValue(pr, workspace.TagPRBase), Tip: tagValue(pr, workspace.TagCommit), Channel: tagValue(pr, "h"), CreatedAt: int64(pr.CreatedAt), Status: "open"}
	var tipAt, statusAt nostr.Timestamp
	for _, ev := range thread {
		switch {
		case ev.Kind == workspace.KindPullRequestUpdate && tagValue(ev, "E") == pr.ID && ev.CreatedAt >= tipAt:
			tipAt, p.Tip = ev.CreatedAt, tagValue(ev, workspace.TagCommit)
		case ev.Kind >= workspace.KindStatusOpen && ev.Kind <= workspace.KindStatusDraft && tagValue(ev, "e") == pr.ID && ev.CreatedAt >= statusAt:
			statusAt, p.Status = ev.CreatedAt, statusName(ev.Kind)
		}
	}
	return p
}

// prThread reads what refers to the pull requests ids: updates and
// comments (E) and statuses (e).
func prThread(in *inv, ids []string) ([]*nostr.Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return in.c.Query(in.ctx,
		nostr.Filter{Kinds: []int{workspace.KindPullRequestUpdate, workspace.KindComment}, Tags: nostr.TagMap{"E": ids}, Limit: maxPRThread},
		nostr.Filter{Kinds: statusKinds(), Tags: nostr.TagMap{"e": ids}, Limit: maxPRThread})
}

func runPRList(in *inv) error {
	r, err := needRepo(in)
	if err != nil {
		return err
	}
	state := in.p.str("state")
	if state == "" {
		state = "open"
	}
	// By p (the owner), then the a tag: relays may not index a tag value
	// as long as this address (buzz-relay indexes up to 100 bytes).
	all, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindPullRequest}, Tags: nostr.TagMap{"p": {r.owner}}, Limit: maxPRListed})
	if err != nil {
		return err
	}
	var prs []*nostr.Event
	for _, pr := range all {
		if pr.Tags.FindWithValue("a", r.address()) != nil {
			prs = append(prs, pr)
		}
	}
	ids := make([]string, len(prs))
	for i, pr := range prs {
		ids[i] = pr.ID
	}
	thread, err := prThread(in, ids)
	if err != nil {
		return err
	}
	out := []prInfo{}
	for _, pr := range prs {
		p := describePR(pr, r, thread)
		if state == "all" || p.Status == state {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt > out[j].CreatedAt })
	return writeJSON(in.out, out)
}

// prComment is a comment or review as view prints it.
type prComment struct {
	ID      string `json:"id"`
	Author  string `json:"author"`
	Body    string `json:"body"`
	Review  string `json:"review,omitempty"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Commit  string `json:"commit,omitempty"`
	ReplyTo string `json:"reply_to,omitempty"`
	// Resolved is a resolve mark's value (resolved or open), "" for a
	// comment.
	Resolved string `json:"resolved,omitempty"`
	// ReviewRequest is whom a review request asks (hex), "" none.
	ReviewRequest string `json:"review_request,omitempty"`
	CreatedAt     int64  `json:"created_at"`
}

func runPRView(in *inv) error {
	pr, r, err := needPR(in)
	if err != nil {
		return err
	}
	thread, err := prThread(in, []string{pr.ID})
	if err != nil {
		return err
	}
	p := describePR(pr, r, thread)
	p.Body = pr.Content
	comments := []prComment{}
	for _, ev := range thread {
		if ev.Kind != workspace.KindComment {
			continue
		}
		c := prComment{ID: ev.ID, Author: ev.PubKey, Body: ev.Content, Review: tagValue(ev, workspace.TagReview), File: tagValue(ev, workspace.TagCommentFile),
			Commit: tagValue(ev, workspace.TagCommentCommit), Resolved: tagValue(ev, workspace.TagCommentResolved),
			ReviewRequest: tagValue(ev, workspace.TagReviewRequest), CreatedAt: int64(ev.CreatedAt)}
		c.Line, _ = strconv.Atoi(tagValue(ev, workspace.TagCommentLine))
		if e := tagValue(ev, "e"); e != pr.ID {
			c.ReplyTo = e
		}
		comments = append(comments, c)
	}
	sort.Slice(comments, func(i, j int) bool { return comments[i].CreatedAt < comments[j].CreatedAt })
	return writeJSON(in.out, map[string]any{"pr": p, "comments": comments})
}

// repoHTTP calls endpoint of r's hosted repository (buzz-diff, buzz-merge)
// with a NIP-98 token and body as JSON, and returns at most maxDiffRead
// bytes of its answer; a refusal names the endpoint.
func repoHTTP(in *inv, r repoRef, method, endpoint string, body []byte) ([]byte, error) {
	b, err := in.c.Signed(in.ctx, method, in.c.Base()+"/git/"+r.owner+"/"+r.name+".git/"+endpoint, body, maxDiffRead)
	var e *Error
	if errors.As(err, &e) {
		e.Message = strings.SplitN(endpoint, "?", 2)[0] + ": " + e.Message
	}
	return b, err
}

func runPRDiff(in *inv) error {
	pr, r, err := needPR(in)
	if err != nil {
		return err
	}
	b, err := repoHTTP(in, r, http.MethodGet, "buzz-diff?pr="+pr.ID, nil)
	if err != nil {
		return err
	}
	_, err = in.out.Write(b)
	return err
}

// commentEvent builds a NIP-22 comment on pr (or on a comment of it).
// replyTo, when set, is the id of the comment (or other event) it answers.
func commentEvent(in *inv, pr *nostr.Event, r repoRef, body, replyTo string) (*nostr.Event, error) {
	ev := &nostr.Event{Kind: workspace.KindComment, Content: body, Tags: nostr.Tags{
		{"E", pr.ID, "", pr.PubKey}, {"K", strconv.Itoa(workspace.KindPullRequest)}, {"P", pr.PubKey}}}
	parent, parentKind, parentAuthor := pr.ID, workspace.KindPullRequest, pr.PubKey
	if replyTo != "" {
		id, err := parseHexID(replyTo)
		if err != nil {
			return nil, err
		}
		target, err := fetchTarget(in, id)
		if err != nil {
			return nil, err
		}
		parent, parentKind, parentAuthor = target.ID, target.Kind, target.PubKey
		if target.Kind == workspace.KindComment && tagValue(target, "E") != pr.ID {
			return nil, userErr("comment %s is not on pull request %s", id, pr.ID)
		}
		// A reply stays on its thread's line: it carries the anchor of
		// the comment it answers unless it names its own.
		if !in.p.has("file") && !in.p.has("line") {
			for _, name := range []string{workspace.TagCommentFile, workspace.TagCommentLine, workspace.TagCommentCommit} {
				if v := tagValue(target, name); v != "" {
					ev.Tags = append(ev.Tags, nostr.Tag{name, v})
				}
			}
		}
	}
	ev.Tags = append(ev.Tags, nostr.Tag{"e", parent, "", parentAuthor}, nostr.Tag{"k", strconv.Itoa(parentKind)}, nostr.Tag{"p", parentAuthor})
	if h := tagValue(pr, "h"); h != "" {
		ev.Tags = append(ev.Tags, nostr.Tag{"h", h})
	}
	if f := in.p.str("file"); f != "" {
		ev.Tags = append(ev.Tags, nostr.Tag{workspace.TagCommentFile, f})
	}
	if in.p.has("line") {
		n, err := in.p.nonNegative("line", 0)
		if err != nil || n == 0 {
			return nil, userErr("--line must be a line number (1 or more)")
		}
		ev.Tags = append(ev.Tags, nostr.Tag{workspace.TagCommentLine, strconv.FormatInt(n, 10)})
	}
	if c := in.p.str("commit"); c != "" {
		ev.Tags = append(ev.Tags, nostr.Tag{workspace.TagCommentCommit, c})
	}
	return ev, nil
}

// prBody is --body (at most maxPRBody bytes; "-" reads stdin) when it is
// given, or def.
func prBody(in *inv, def string) (string, error) {
	if !in.p.has("body") {
		return def, nil
	}
	return readText(in, "body", maxPRBody)
}

func runPRComment(in *inv) error {
	pr, r, err := needPR(in)
	if err != nil {
		return err
	}
	body, err := readText(in, "body", maxPRBody)
	if err != nil {
		return err
	}
	ev, err := commentEvent(in, pr, r, body, in.p.str("reply-to"))
	if err != nil {
		return err
	}
	return publishAndPrint(in, ev)
}

// runPRRequestReview asks --reviewer to review the pull request: a
// comment on it that p-tags them and names them in buzz-review-request
// (an agent's harness wakes it with the pull request in its prompt).
func runPRRequestReview(in *inv) error {
	pr, r, err := needPR(in)
	if err != nil {
		return err
	}
	v, err := need(in, "reviewer")
	if err != nil {
		return err
	}
	who, err := parsePubkey(v)
	if err != nil {
		return err
	}
	body, err := prBody(in, "Please review this pull request.")
	if err != nil {
		return err
	}
	ev, err := commentEvent(in, pr, r, body, "")
	if err != nil {
		return err
	}
	ev.Tags = append(ev.Tags, nostr.Tag{"p", who}, nostr.Tag{workspace.TagReviewRequest, who})
	return publishAndPrint(in, ev)
}

// runPRResolve marks the thread of --comment resolved, or open again
// with --reopen: a reply carrying buzz-resolved, the newest of which
// counts. Anyone who may comment may mark it.
func runPRResolve(in *inv) error {
	pr, r, err := needPR(in)
	if err != nil {
		return err
	}
	if _, err := need(in, "comment"); err != nil {
		return err
	}
	mark, body := workspace.ResolvedYes, "Resolved."
	if in.p.boolean("reopen") {
		mark, body = workspace.ResolvedNo, "Reopened."
	}
	ev, err := commentEvent(in, pr, r, body, in.p.str("comment"))
	if err != nil {
		return err
	}
	ev.Tags = append(ev.Tags, nostr.Tag{workspace.TagCommentResolved, mark})
	return publishAndPrint(in, ev)
}

func runPRReview(in *inv) error {
	pr, r, err := needPR(in)
	if err != nil {
		return err
	}
	verdict := ""
	switch {
	case in.p.boolean("approve") && !in.p.boolean("request-changes"):
		verdict = workspace.ReviewApprove
	case in.p.boolean("request-changes") && !in.p.boolean("approve"):
		verdict = workspace.ReviewRequestChanges
	default:
		return userErr("say --approve or --request-changes")
	}
	body, err := prBody(in, "")
	if err != nil {
		return err
	}
	ev, err := commentEvent(in, pr, r, body, "")
	if err != nil {
		return err
	}
	ev.Tags = append(ev.Tags, nostr.Tag{workspace.TagReview, verdict})
	// The newest verdict counts, by created_at: date this one after any
	// earlier one of ours, even within the same second.
	ev.CreatedAt = nostr.Now()
	mine, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindComment}, Authors: []string{in.pubkey}, Tags: nostr.TagMap{"E": {pr.ID}}, Limit: maxPRThread})
	if err != nil {
		return err
	}
	for _, m := range mine {
		if m.Tags.Find(workspace.TagReview) != nil && m.CreatedAt >= ev.CreatedAt {
			ev.CreatedAt = m.CreatedAt + 1
		}
	}
	return publishAndPrint(in, ev)
}

func runPRMerge(in *inv) error {
	pr, r, err := needPR(in)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"pr": pr.ID})
	b, err := repoHTTP(in, r, http.MethodPost, "buzz-merge", body)
	if err != nil {
		return err
	}
	var ans struct {
		MergeCommit string `json:"merge_commit"`
		FastForward bool   `json:"fast_forward"`
		Base        string `json:"base"`
		Head        string `json:"head"`
		Tip         string `json:"tip"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return otherErr("merge answer %q: %v", b, err)
	}
	content := fmt.Sprintf("Merged %s into %s as %s", ans.Head, ans.Base, ans.MergeCommit)
	res, err := publishStatus(in, pr, r, workspace.KindStatusMerged, content,
		nostr.Tag{workspace.TagMergeCommit, ans.MergeCommit}, nostr.Tag{"r", ans.MergeCommit})
	if err != nil {
		return err
	}
	return writeJSON(in.out, map[string]any{"pr": pr.ID, "merge_commit": ans.MergeCommit, "fast_forward": ans.FastForward,
		"base": ans.Base, "head": ans.Head, "status_event": res.EventID})
}

// statusCmd publishes status k on --pr, with --body as its text.
func statusCmd(k int) func(*inv) error {
	return func(in *inv) error {
		pr, r, err := needPR(in)
		if err != nil {
			return err
		}
		body, err := prBody(in, "")
		if err != nil {
			return err
		}
		res, err := publishStatus(in, pr, r, k, body)
		if err != nil {
			return err
		}
		return writeJSON(in.out, map[string]any{"pr": pr.ID, "status": statusName(k), "status_event": res.EventID})
	}
}
