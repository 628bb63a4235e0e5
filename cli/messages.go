package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
)

// messageKinds are what `messages get` reads by default.
func messageKinds() []int {
	return []int{workspace.KindStream, workspace.KindStreamV2, workspace.KindDiff, workspace.KindForumPost, workspace.KindForumComment}
}

// sendResult is the write response plus the mentions actually signed.
type sendResult struct {
	relayclient.Result
	MentionPubkeys []string `json:"mention_pubkeys"`
}

func runSend(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	kind := workspace.KindStream
	if in.p.has("kind") {
		k, err := strconv.Atoi(in.p.str("kind"))
		if err != nil || (k != workspace.KindStream && k != workspace.KindForumPost && k != workspace.KindForumComment) {
			return userErr("--kind must be 9, 45001 or 45003, got %q", in.p.str("kind"))
		}
		kind = k
	}
	files := in.p.list("file")
	content := ""
	if in.p.has("content") || len(files) == 0 {
		if content, err = readText(in, "content", maxContentBytes); err != nil {
			return err
		}
	}
	if strings.TrimSpace(content) == "" && len(files) == 0 {
		return userErr("refusing to send an empty message (content is empty or whitespace only); pass text with --content, or pipe it with --content -")
	}
	replyTo := ""
	if in.p.has("reply-to") {
		if replyTo, err = parseHexID(in.p.str("reply-to")); err != nil {
			return err
		}
	}
	switch {
	case kind == workspace.KindForumComment && replyTo == "":
		return userErr("--kind 45003 (forum comment) needs --reply-to <post id>")
	case kind == workspace.KindForumPost && replyTo != "":
		return userErr("--kind 45001 (forum post) starts a thread; drop --reply-to or use --kind 45003")
	}
	mentions, err := resolveMentions(in, ch, content)
	if err != nil {
		return err
	}
	ev := &nostr.Event{Kind: kind, Content: content, Tags: nostr.Tags{{"h", ch}}}
	if len(files) > 0 {
		tags, urls, err := attachFiles(in, ch, files)
		if err != nil {
			return err
		}
		ev.Tags = append(ev.Tags, tags...)
		ev.Content = strings.TrimSpace(strings.Join(append([]string{content}, urls...), "\n"))
	}
	if replyTo != "" {
		parent, err := fetchOne(in, replyTo)
		if err != nil {
			return err
		}
		if parent == nil {
			return notFound("--reply-to event %s not found", replyTo)
		}
		ev.Tags = append(ev.Tags, threadTags(parent)...)
	}
	for _, pk := range mentions {
		ev.Tags = append(ev.Tags, nostr.Tag{"p", pk})
	}
	if in.p.boolean("broadcast") {
		ev.Tags = append(ev.Tags, nostr.Tag{"broadcast", "1"})
	}
	res, err := signAndPublish(in, ev)
	if err != nil {
		return err
	}
	return writeJSON(in.out, sendResult{res, mentions})
}

// resolveMentions builds the final p list of spec §6.5 step 2: explicit
// --mention values, NIP-27 references, then @Name matches; unique, at most
// maxMentions, and every one a member of the channel.
func resolveMentions(in *inv, ch, content string) ([]string, error) {
	var explicit []string
	for _, m := range in.p.list("mention") {
		pk, err := parsePubkey(m)
		if err != nil {
			return nil, userErr("--mention: %s", err.Error())
		}
		if !contains(explicit, pk) {
			explicit = append(explicit, pk)
		}
	}
	if len(explicit) > maxMentions {
		return nil, userErr("%d mentions, over the limit of %d", len(explicit), maxMentions)
	}
	text := stripCode(content)
	uris := nostrRefs(text)
	hasAt := strings.Contains(text, "@")
	if !hasAt && len(explicit) == 0 && len(uris) == 0 {
		return []string{}, nil
	}
	members, err := channelMembers(in, ch)
	if err != nil {
		return nil, otherErr("could not load channel membership for mention preflight: %s", asError(err).Message)
	}
	var resolved []string
	if hasAt {
		named, err := memberNames(in, members)
		if err != nil {
			return nil, otherErr("could not load member profiles for mention preflight: %s", asError(err).Message)
		}
		// An @word that names no member is plain text ("use the @latest
		// tag"); one that names several members cannot be guessed.
		r := resolveAt(text, named)
		if len(r.Ambiguous) > 0 && len(explicit) == 0 && len(uris) == 0 {
			var why []string
			for _, n := range r.Ambiguous {
				why = append(why, "@"+n+" matches several channel members")
			}
			return nil, userErr("could not resolve mention: %s; name people with --mention <hex|npub> (the text may keep the @name)", strings.Join(why, "; "))
		}
		resolved = r.Resolved
	}
	out := []string{}
	for _, list := range [][]string{explicit, uris, resolved} {
		for _, pk := range list {
			if !contains(out, pk) {
				out = append(out, pk)
			}
		}
	}
	if len(out) > maxMentions {
		return nil, userErr("%d mentions, over the limit of %d", len(out), maxMentions)
	}
	var missing []string
	for _, pk := range out {
		if _, ok := members[pk]; !ok {
			missing = append(missing, pk)
		}
	}
	if len(missing) > 0 {
		hint := "buzz channels add-member --channel " + ch + " --pubkey " + missing[0]
		b, _ := json.Marshal(map[string]any{
			"reason":                 "mentioned pubkeys are not members of the channel; add them first or drop the mention",
			"missing_member_pubkeys": missing,
			"add_member_command":     hint,
		})
		return nil, userErr("%s", b)
	}
	return out, nil
}

// channelMembers reads the channel's kind 39002 member list: pubkey → role.
func channelMembers(in *inv, ch string) (map[string]string, error) {
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"d": []string{ch}}, Limit: 1})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if len(evs) == 0 {
		return out, nil
	}
	sortDescending(evs)
	for _, t := range evs[0].Tags {
		if len(t) >= 2 && t[0] == "p" && nostrkey.IsLowerHex(t[1], 64) {
			role := "member"
			if len(t) >= 4 && t[3] != "" {
				role = t[3]
			}
			out[t[1]] = role
		}
	}
	return out, nil
}

// profile is the part of kind 0 content the CLI uses.
type profile struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
}

// profiles fetches the newest kind 0 of each author, decoded loosely.
func profiles(in *inv, authors []string) (map[string]map[string]any, error) {
	evs, err := profileEvents(in, authors)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]any, len(evs))
	for pk, p := range evs {
		out[pk] = p.content
	}
	return out, nil
}

// profileEvent is an author's newest kind 0 whose content decodes.
type profileEvent struct {
	ev      *nostr.Event
	content map[string]any
}

func profileEvents(in *inv, authors []string) (map[string]profileEvent, error) {
	out := map[string]profileEvent{}
	for start := 0; start < len(authors); start += usersMaxPubkeys {
		chunk := authors[start:min(start+usersMaxPubkeys, len(authors))]
		evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindProfile}, Authors: chunk, Limit: len(chunk)})
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			if p, ok := out[ev.PubKey]; ok && p.ev.CreatedAt >= ev.CreatedAt {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(ev.Content), &m) != nil || m == nil {
				continue
			}
			out[ev.PubKey] = profileEvent{ev, m}
		}
	}
	return out, nil
}

// successor is the created_at for a new version of a replaceable event
// whose current version is prev (nil: none): now, or one second past prev,
// so that a quick edit is not dropped as older than, or tied with, it.
func successor(prev *nostr.Event) nostr.Timestamp {
	now := nostr.Now()
	if prev != nil && prev.CreatedAt >= now {
		return prev.CreatedAt + 1
	}
	return now
}

// displayName is display_name, else name.
func displayName(m map[string]any) string {
	if s, _ := m["display_name"].(string); strings.TrimSpace(s) != "" {
		return s
	}
	s, _ := m["name"].(string)
	return s
}

func memberNames(in *inv, members map[string]string) ([]member, error) {
	pks := make([]string, 0, len(members))
	for pk := range members {
		pks = append(pks, pk)
	}
	sort.Strings(pks)
	profs, err := profiles(in, pks)
	if err != nil {
		return nil, err
	}
	var out []member
	for _, pk := range pks {
		if m, ok := profs[pk]; ok {
			out = append(out, member{Pubkey: pk, Name: displayName(m)})
		}
	}
	return out, nil
}

func runGet(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	limit, err := clampLimit(in, messagesGetDefault, messagesGetMax)
	if err != nil {
		return err
	}
	f, err := channelFilter(in, ch)
	if err != nil {
		return err
	}
	f.Limit = int(limit)
	evs, err := in.c.Query(in.ctx, f)
	if err != nil {
		return err
	}
	sortAscending(evs)
	return writeJSON(in.out, normaliseAll(evs, in.compact))
}

// channelFilter is the kinds/#h/until/since part of get and list.
func channelFilter(in *inv, ch string) (nostr.Filter, error) {
	kinds := messageKinds()
	if in.p.has("kinds") {
		k, err := parseKinds(in.p.str("kinds"))
		if err != nil {
			return nostr.Filter{}, err
		}
		kinds = k
	}
	f := nostr.Filter{Kinds: kinds, Tags: nostr.TagMap{"h": []string{ch}}}
	if in.p.has("before") {
		n, err := in.p.nonNegative("before", 0)
		if err != nil {
			return nostr.Filter{}, err
		}
		f.Until = timestamp(n)
	}
	if in.p.has("since") {
		n, err := in.p.nonNegative("since", 0)
		if err != nil {
			return nostr.Filter{}, err
		}
		f.Since = timestamp(n)
	}
	return f, nil
}

// runList streams every matching event, newest first, one page at a time:
// memory stays bounded by a page however long the channel is.
func runList(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	total, err := in.p.nonNegative("limit", 0)
	if err != nil {
		return err
	}
	f, err := channelFilter(in, ch)
	if err != nil {
		return err
	}
	w := newArrayWriter(in.out)
	err = pages(in, f, total, func(ev *nostr.Event) error { return w.add(normalise(ev, in.compact)) })
	if err != nil {
		return err // a partial array stays unterminated: it must not parse as complete
	}
	return w.close()
}

// pages runs f page by page (pageSize each, newest first), moving `until`
// to the last event's created_at and `before_id` to its id; events at the
// boundary second that were already seen are skipped (and asked for on
// top of the page), so relays that ignore before_id page correctly too.
// total 0 means no cap.
func pages(in *inv, nf nostr.Filter, total int64, fn func(*nostr.Event) error) error {
	f := relayclient.Filter{Filter: nf}
	var n int64
	seen := map[string]bool{}
	for {
		size := int64(pageSize)
		if total > 0 {
			size = min(size, total-n)
		}
		// A relay that ignores before_id sends the boundary second's
		// events again; ask for that many more so the page still advances.
		size += int64(len(seen))
		page := f
		page.Limit = int(size)
		evs, err := in.c.QueryExt(in.ctx, page)
		if err != nil {
			return err
		}
		sortDescending(evs)
		var last *nostr.Event
		fresh := 0
		for _, ev := range evs {
			if seen[ev.ID] {
				continue
			}
			if last != nil && ev.CreatedAt != last.CreatedAt {
				clear(seen)
			}
			seen[ev.ID] = true
			last = ev
			fresh++
			if err := fn(ev); err != nil {
				return err
			}
			n++
			if total > 0 && n >= total {
				return nil
			}
		}
		// Relays clamp limits to their own maximum, so a short page does not
		// prove the end; a page with nothing new does.
		if fresh == 0 {
			return nil
		}
		f.Until = &last.CreatedAt
		f.BeforeID = last.ID
	}
}

// arrayWriter streams a JSON array, one element at a time.
type arrayWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func newArrayWriter(w interface{ Write([]byte) (int, error) }) *arrayWriter {
	return &arrayWriter{w: w}
}

func (a *arrayWriter) add(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return otherErr("encode output: %v", err)
	}
	sep := ",\n"
	if a.n == 0 {
		sep = "[\n"
	}
	a.n++
	if _, err := a.w.Write(append([]byte(sep), b...)); err != nil {
		return otherErr("write output: %v", err)
	}
	return nil
}

func (a *arrayWriter) close() error {
	end := "\n]\n"
	if a.n == 0 {
		end = "[]\n"
	}
	if _, err := a.w.Write([]byte(end)); err != nil {
		return otherErr("write output: %v", err)
	}
	return nil
}

func runThread(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	id, err := needEvent(in)
	if err != nil {
		return err
	}
	limit, err := clampLimit(in, threadDefault, threadMax)
	if err != nil {
		return err
	}
	sel, err := fetchTarget(in, id)
	if err != nil {
		return err
	}
	if evCh, _ := channelOf(sel); evCh != ch {
		return userErr("event %s belongs to channel %q, not %s", id, evCh, ch)
	}
	root := threadRoot(sel)
	ext := relayclient.Filter{Filter: nostr.Filter{Kinds: []int{workspace.KindStream, workspace.KindStreamV2, workspace.KindEdit, workspace.KindDiff, workspace.KindForumComment}, Tags: nostr.TagMap{"h": []string{ch}, "e": []string{root}}, Limit: int(limit)}}
	if in.p.has("depth-limit") {
		d, err := in.p.nonNegative("depth-limit", 0)
		if err != nil {
			return err
		}
		ext.DepthLimit = d
	}
	evs, err := in.c.QueryExt(in.ctx, ext, relayclient.Filter{Filter: nostr.Filter{IDs: []string{root}, Tags: nostr.TagMap{"h": []string{ch}}, Limit: 1}})
	if err != nil {
		return err
	}
	evs = uniqueEvents(evs)
	sortAscending(evs)
	// The root opens the thread even when a reply shares its second.
	for i, ev := range evs {
		if ev.ID == root && i > 0 {
			copy(evs[1:i+1], evs[:i])
			evs[0] = ev
		}
	}
	return writeJSON(in.out, normaliseAll(evs, in.compact))
}

func uniqueEvents(evs []*nostr.Event) []*nostr.Event {
	seen := map[string]bool{}
	out := evs[:0]
	for _, ev := range evs {
		if !seen[ev.ID] {
			seen[ev.ID] = true
			out = append(out, ev)
		}
	}
	return out
}

func runSearch(in *inv) error {
	q, author := in.p.str("query"), in.p.str("author")
	if q == "" && author == "" {
		return userErr("give --query, --author or both")
	}
	limit, err := clampLimit(in, searchDefault, searchMax)
	if err != nil {
		return err
	}
	f := nostr.Filter{Kinds: []int{workspace.KindStream, workspace.KindStreamV2, workspace.KindForumPost, workspace.KindForumComment, workspace.KindComment}, Limit: int(limit)}
	if q != "" {
		f.Search = q
	}
	if in.p.has("since") {
		n, err := in.p.nonNegative("since", 0)
		if err != nil {
			return err
		}
		f.Since = timestamp(n)
	}
	if author != "" {
		pk, err := resolveAuthor(in, author)
		if err != nil {
			return err
		}
		f.Authors = []string{pk}
	}
	evs, err := in.c.Query(in.ctx, f)
	if err != nil {
		return err
	}
	if q == "" {
		sortDescending(evs)
	}
	return writeJSON(in.out, normaliseAll(evs, in.compact))
}

// resolveAuthor takes hex, npub, or a profile name matched exactly
// (case-insensitively) on display_name or name.
func resolveAuthor(in *inv, who string) (string, error) {
	if pk, err := parsePubkey(who); err == nil {
		return pk, nil
	}
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindProfile}, Search: who, Limit: 100})
	if err != nil {
		return "", err
	}
	var found []string
	var labels []string
	for _, ev := range evs {
		var p profile
		if json.Unmarshal([]byte(ev.Content), &p) != nil {
			continue
		}
		if (strings.EqualFold(p.DisplayName, who) || strings.EqualFold(p.Name, who)) && !contains(found, ev.PubKey) {
			found = append(found, ev.PubKey)
			labels = append(labels, fmt.Sprintf("%s (%s)", firstNonEmpty(p.DisplayName, p.Name), ev.PubKey))
		}
	}
	switch len(found) {
	case 0:
		return "", userErr("no user named %q; pass --author as hex or npub", who)
	case 1:
		return found[0], nil
	}
	return "", userErr("%d users are named %q: %s; pass --author as hex or npub", len(found), who, strings.Join(labels[:min(len(labels), nameSearchCandidates)], ", "))
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func runEdit(in *inv) error {
	id, err := needEvent(in)
	if err != nil {
		return err
	}
	content, err := readText(in, "content", maxContentBytes)
	if err != nil {
		return err
	}
	if strings.TrimSpace(content) == "" {
		return userErr("refusing to set an empty message text; use buzz messages delete to remove it")
	}
	target, err := fetchTarget(in, id)
	if err != nil {
		return err
	}
	ch, err := channelOf(target)
	if err != nil {
		return err
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindEdit, Content: content, Tags: nostr.Tags{{"h", ch}, {"e", id}}})
}

func runDelete(in *inv) error {
	id, err := needEvent(in)
	if err != nil {
		return err
	}
	var extra nostr.Tags
	if in.p.has("action-id") {
		a, err := parseUUID(in.p.str("action-id"))
		if err != nil {
			return err
		}
		extra = append(extra, nostr.Tag{"action_id", a})
	}
	if v := in.p.str("reason-code"); v != "" {
		extra = append(extra, nostr.Tag{"reason_code", v})
	}
	if v := in.p.str("public-reason"); v != "" {
		extra = append(extra, nostr.Tag{"public_reason", v})
	}
	target, err := fetchTarget(in, id)
	if err != nil {
		return err
	}
	ch, err := channelOf(target)
	if err != nil {
		return err
	}
	tags := append(nostr.Tags{{"h", ch}, {"e", id}}, extra...)
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindDeleteEvent, Content: "", Tags: tags})
}

func runVote(in *inv) error {
	id, err := needEvent(in)
	if err != nil {
		return err
	}
	content := ""
	switch in.p.str("direction") {
	case "up":
		content = "+"
	case "down":
		content = "-"
	default:
		return userErr("--direction must be up or down")
	}
	target, err := fetchTarget(in, id)
	if err != nil {
		return err
	}
	ch, err := channelOf(target)
	if err != nil {
		return err
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindVote, Content: content, Tags: nostr.Tags{{"h", ch}, {"e", id}}})
}
