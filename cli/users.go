package cli

import (
	"buzzbox/internal/workspace"
	"encoding/json"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

func runUsersGet(in *inv) error {
	keys := in.p.list("pubkey")
	name := in.p.str("name")
	if name != "" && len(keys) > 0 {
		return userErr("--name and --pubkey exclude each other")
	}
	var rows []map[string]any
	if name != "" {
		evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindProfile}, Search: name, Limit: usersMaxPubkeys})
		if err != nil {
			return err
		}
		sortDescending(evs)
		seen := map[string]bool{}
		ln := strings.ToLower(name)
		for _, ev := range evs {
			var m map[string]any
			if seen[ev.PubKey] || json.Unmarshal([]byte(ev.Content), &m) != nil || m == nil {
				continue
			}
			seen[ev.PubKey] = true
			dn, _ := m["display_name"].(string)
			n, _ := m["name"].(string)
			if strings.Contains(strings.ToLower(dn), ln) || strings.Contains(strings.ToLower(n), ln) {
				m["pubkey"] = ev.PubKey
				rows = append(rows, m)
			}
		}
	} else {
		var pks []string
		for _, k := range keys {
			pk, err := parsePubkey(k)
			if err != nil {
				return err
			}
			if !contains(pks, pk) {
				pks = append(pks, pk)
			}
		}
		if len(pks) == 0 {
			pks = []string{in.pubkey}
		}
		if len(pks) > usersMaxPubkeys {
			return userErr("%d pubkeys, over the limit of %d", len(pks), usersMaxPubkeys)
		}
		profs, err := profiles(in, pks)
		if err != nil {
			return err
		}
		for _, pk := range pks {
			if m, ok := profs[pk]; ok {
				m["pubkey"] = pk
				rows = append(rows, m)
			}
		}
	}
	if in.compact {
		out := make([]map[string]any, 0, len(rows))
		for _, m := range rows {
			out = append(out, map[string]any{"pubkey": m["pubkey"], "display_name": displayName(m)})
		}
		return writeJSON(in.out, out)
	}
	if rows == nil {
		rows = []map[string]any{}
	}
	return writeJSON(in.out, rows)
}

func runSetProfile(in *inv) error {
	fields := map[string]string{"name": "name", "display-name": "display_name", "about": "about", "avatar": "picture", "nip05": "nip05"}
	profs, err := profileEvents(in, []string{in.pubkey})
	if err != nil {
		return err
	}
	prev := profs[in.pubkey]
	m := prev.content
	if m == nil {
		m = map[string]any{}
	}
	changed := false
	for flag, key := range fields {
		if in.p.has(flag) {
			m[key] = in.p.str(flag)
			changed = true
		}
	}
	if !changed {
		return userErr("nothing to change; pass --name, --display-name, --about, --avatar or --nip05")
	}
	b, err := json.Marshal(m)
	if err != nil {
		return otherErr("encode profile: %v", err)
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindProfile, Content: string(b), CreatedAt: successor(prev.ev)})
}

func runPresence(in *inv) error {
	s := in.p.str("status")
	switch s {
	case "online", "away", "offline":
	default:
		return userErr("--status must be online, away or offline, got %q", s)
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindPresence, Content: s})
}

func runCanvasGet(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindCanvas}, Tags: nostr.TagMap{"h": []string{ch}}, Limit: 1})
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return writeJSON(in.out, nil)
	}
	sortDescending(evs)
	_, err = in.out.Write([]byte(evs[0].Content + "\n"))
	return err
}

func runCanvasSet(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	content, err := readText(in, "content", maxContentBytes)
	if err != nil {
		return err
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindCanvas, Content: content, Tags: nostr.Tags{{"h", ch}}})
}

// feedKinds maps a feed type to the kinds it covers; the filter always
// asks for events that p-tag the caller.
func feedKinds(t string) ([]int, bool) {
	switch t {
	case "mentions":
		return []int{workspace.KindStream, workspace.KindStreamV2, workspace.KindDiff, workspace.KindForumPost, workspace.KindForumComment}, true
	case "needs_action":
		return []int{workspace.KindApprovalRequest}, true
	case "activity":
		return []int{workspace.KindReaction, workspace.KindEdit, workspace.KindDeleteEvent, workspace.KindAddUser, workspace.KindRemoveUser, workspace.KindMemberAdded, workspace.KindMemberRemoved, workspace.KindVote}, true
	case "agent_activity":
		return []int{workspace.KindEngram, workspace.KindCanvas}, true
	}
	return nil, false
}

func runFeed(in *inv) error {
	limit, err := clampLimit(in, feedDefault, feedMax)
	if err != nil {
		return err
	}
	f := nostr.Filter{Tags: nostr.TagMap{"p": []string{in.pubkey}}, Limit: int(limit)}
	if in.p.has("since") {
		n, err := in.p.nonNegative("since", 0)
		if err != nil {
			return err
		}
		f.Since = timestamp(n)
	}
	types := "mentions,needs_action,activity,agent_activity"
	if in.p.has("types") {
		types = in.p.str("types")
	}
	{
		var kinds []int
		for _, t := range strings.Split(types, ",") {
			t = strings.TrimSpace(t)
			k, ok := feedKinds(t)
			if !ok {
				return userErr("invalid feed type %q; must be one of: mentions, needs_action, activity, agent_activity", t)
			}
			kinds = append(kinds, k...)
		}
		f.Kinds = kinds
	}
	evs, err := in.c.Query(in.ctx, f)
	if err != nil {
		return err
	}
	var keep []*nostr.Event
	for _, ev := range evs {
		if ev.PubKey != in.pubkey {
			keep = append(keep, ev)
		}
	}
	sortDescending(keep)
	return writeJSON(in.out, normaliseAll(keep, in.compact))
}
