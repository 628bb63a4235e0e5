package cli

import (
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
)

// Agents' permission requests: an agent's harness posts a kind 46010 in
// the thread it works in when the agent asks before acting; the agent's
// owner or a channel admin answers with a 46030 (allow) or 46031 (reject)
// naming the request (e), its channel (h), the agent (p) and the option
// chosen. The harness closes each request with an answer it signs as the
// agent: the one it accepted, or the rejection of one nobody answered.

// maxApprovalsListed bounds the requests list reads.
const maxApprovalsListed = 200

// approvalOption is one answer a request offers.
type approvalOption struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // allow_once, allow_always, reject_once, reject_always
	Name string `json:"name"`
}

// approvalInfo is a pending request as list prints it.
type approvalInfo struct {
	ID        string           `json:"id"`
	Channel   string           `json:"channel"`
	Agent     string           `json:"agent"`
	Tool      string           `json:"tool"`
	Command   string           `json:"command,omitempty"`
	DiffPath  string           `json:"diff_path,omitempty"`
	Diff      string           `json:"diff,omitempty"`
	Rule      string           `json:"rule,omitempty"`
	Options   []approvalOption `json:"options"`
	Expires   int64            `json:"expires"`
	CreatedAt int64            `json:"created_at"`
}

func toApproval(ev *nostr.Event) approvalInfo {
	a := approvalInfo{ID: ev.ID, Channel: tagValue(ev, "h"), Agent: ev.PubKey, Tool: tagValue(ev, workspace.TagApprovalTool),
		Command: tagValue(ev, workspace.TagApprovalCommand), Rule: tagValue(ev, workspace.TagApprovalRule),
		CreatedAt: int64(ev.CreatedAt), Options: []approvalOption{}}
	if t := ev.Tags.Find(workspace.TagApprovalDiff); len(t) >= 3 {
		a.DiffPath, a.Diff = t[1], t[2]
	}
	a.Expires, _ = strconv.ParseInt(tagValue(ev, workspace.TagApprovalExpires), 10, 64)
	for _, t := range ev.Tags {
		if len(t) >= 3 && t[0] == workspace.TagApprovalOption {
			o := approvalOption{ID: t[1], Kind: t[2]}
			if len(t) >= 4 {
				o.Name = t[3]
			}
			a.Options = append(a.Options, o)
		}
	}
	return a
}

// isPermissionRequest tells an agent's permission request from a workflow
// step's approval request (which names no options).
func isPermissionRequest(ev *nostr.Event) bool {
	return ev.Tags.Find(workspace.TagApprovalOption) != nil
}

func runApprovalsList(in *inv) error {
	f := nostr.Filter{Kinds: []int{workspace.KindApprovalRequest}, Limit: maxApprovalsListed}
	if in.p.has("channel") {
		ch, err := needChannel(in)
		if err != nil {
			return err
		}
		f.Tags = nostr.TagMap{"h": []string{ch}}
	}
	evs, err := in.c.Query(in.ctx, f)
	if err != nil {
		return err
	}
	now := nostr.Now()
	var ids []string
	var reqs []*nostr.Event
	for _, ev := range evs {
		if !isPermissionRequest(ev) {
			continue
		}
		if exp, err := strconv.ParseInt(tagValue(ev, workspace.TagApprovalExpires), 10, 64); err == nil && exp < int64(now) {
			continue // rejected by its timeout, whether or not the close reached the relay
		}
		ids = append(ids, ev.ID)
		reqs = append(reqs, ev)
	}
	answered := map[string]bool{}
	if len(ids) > 0 {
		answers, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindApprovalGrant, workspace.KindApprovalDeny},
			Tags: nostr.TagMap{"e": ids}})
		if err != nil {
			return err
		}
		byID := map[string]*nostr.Event{}
		for _, r := range reqs {
			byID[r.ID] = r
		}
		for _, a := range answers {
			for _, t := range a.Tags {
				if len(t) >= 2 && t[0] == "e" && byID[t[1]] != nil && closes(a, byID[t[1]]) {
					answered[t[1]] = true
				}
			}
		}
	}
	sortDescending(reqs)
	out := []approvalInfo{}
	for _, r := range reqs {
		if !answered[r.ID] {
			out = append(out, toApproval(r))
		}
	}
	return writeJSON(in.out, out)
}

// closes reports whether answer closes req: the agent's harness signs
// the answer it accepted (or the rejection of one nobody answered); any
// other answer may come from someone who may not answer.
func closes(answer, req *nostr.Event) bool { return answer.PubKey == req.PubKey }

func runApprovalsAnswer(in *inv) error {
	id, err := need(in, "request")
	if err != nil {
		return err
	}
	if id, err = parseHexID(id); err != nil {
		return userErr("--request: %s", err.Error())
	}
	want, n := "", 0
	for _, f := range []struct{ flag, kind string }{{"allow-once", "allow_once"}, {"allow-always", "allow_always"}, {"reject", "reject_once"}} {
		if in.p.boolean(f.flag) {
			want, n = f.kind, n+1
		}
	}
	option := in.p.str("option")
	if option != "" {
		n++
	}
	if n != 1 {
		return userErr("give exactly one of --allow-once, --allow-always, --reject or --option ID")
	}
	req, err := fetchTarget(in, id)
	if err != nil {
		return err
	}
	if req.Kind != workspace.KindApprovalRequest || !isPermissionRequest(req) {
		return userErr("event %s is not an agent's permission request (kind %d with options)", id, workspace.KindApprovalRequest)
	}
	info := toApproval(req)
	var chosen *approvalOption
	for i, o := range info.Options {
		if option != "" && o.ID == option || option == "" && o.Kind == want {
			chosen = &info.Options[i]
			break
		}
	}
	if chosen == nil && want == "reject_once" {
		for i, o := range info.Options {
			if o.Kind == "reject_always" {
				chosen = &info.Options[i]
			}
		}
	}
	if chosen == nil {
		var offered []string
		for _, o := range info.Options {
			offered = append(offered, o.ID+" ("+o.Kind+")")
		}
		return userErr("the request offers no such option; it offers %s", strings.Join(offered, ", "))
	}
	kind := workspace.KindApprovalDeny
	if strings.HasPrefix(chosen.Kind, "allow_") {
		kind = workspace.KindApprovalGrant
	}
	return publishAndPrint(in, &nostr.Event{Kind: kind, Tags: nostr.Tags{{"h", info.Channel}, {"e", req.ID},
		{"p", req.PubKey}, {workspace.TagApprovalOption, chosen.ID}}})
}
