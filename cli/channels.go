package cli

import (
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/relayclient"
	"sort"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// channelInfo is a channel as list/get print it.
type channelInfo struct {
	ChannelID   string `json:"channel_id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	CreatedAt   int64  `json:"created_at"`
	Archived    bool   `json:"archived"`
	Pubkey      string `json:"pubkey,omitempty"`
}

func toChannel(ev *nostr.Event) channelInfo {
	return channelInfo{
		ChannelID:   tagValue(ev, "d"),
		Name:        tagValue(ev, workspace.TagName),
		Description: tagValue(ev, workspace.TagAbout),
		CreatedAt:   int64(ev.CreatedAt),
		Archived:    hasTag(ev, workspace.TagArchived, "true"),
	}
}

func visibilityOK(ev *nostr.Event, vis string) bool {
	switch vis {
	case workspace.VisibilityOpen:
		return hasTag(ev, workspace.TagPublic)
	case workspace.VisibilityPrivate:
		return hasTag(ev, workspace.TagPrivate)
	}
	return true
}

func runChannelsList(in *inv) error {
	vis := in.p.str("visibility")
	if vis != "" && vis != workspace.VisibilityOpen && vis != workspace.VisibilityPrivate {
		return userErr("--visibility must be open or private, got %q", vis)
	}
	limit, err := in.p.nonNegative("limit", channelsListDefault)
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = channelsListDefault
	}
	f := nostr.Filter{Kinds: []int{workspace.KindGroupMetadata}}
	if in.p.boolean("member") {
		var ids []string
		err := pages(in, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"p": []string{in.pubkey}}}, 0, func(ev *nostr.Event) error {
			if d := tagValue(ev, "d"); d != "" && !contains(ids, d) {
				ids = append(ids, d)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return writeJSON(in.out, []any{})
		}
		f.Tags = nostr.TagMap{"d": ids}
	}
	w := newArrayWriter(in.out)
	seen := map[string]bool{}
	err = pages(in, f, limit, func(ev *nostr.Event) error {
		c := toChannel(ev)
		if !visibilityOK(ev, vis) || c.ChannelID == "" || seen[c.ChannelID] {
			return nil
		}
		seen[c.ChannelID] = true
		if in.compact {
			return w.add(map[string]string{"channel_id": c.ChannelID, "name": c.Name})
		}
		return w.add(c)
	})
	if err != nil {
		return err // a partial array stays unterminated: it must not parse as complete
	}
	return w.close()
}

func runChannelsGet(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindGroupMetadata}, Tags: nostr.TagMap{"d": []string{ch}}, Limit: 1})
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return writeJSON(in.out, nil)
	}
	sortDescending(evs)
	c := toChannel(evs[0])
	c.Pubkey = evs[0].PubKey
	return writeJSON(in.out, c)
}

func runChannelsMembers(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"d": []string{ch}}, Limit: 1})
	if err != nil {
		return err
	}
	type row struct {
		Pubkey string `json:"pubkey"`
		Role   string `json:"role"`
	}
	out := []row{}
	if len(evs) > 0 {
		sortDescending(evs)
		for _, t := range evs[0].Tags {
			if len(t) >= 2 && t[0] == "p" {
				role := "member"
				if len(t) >= 4 && t[3] != "" {
					role = t[3]
				}
				out = append(out, row{t[1], role})
			}
		}
	}
	return writeJSON(in.out, out)
}

// groupCmd is a channel command that sends kind with ["h",ch] and an
// optional fixed extra tag.
func groupCmd(kind int, extra []string) func(*inv) error {
	return func(in *inv) error {
		ch, err := needChannel(in)
		if err != nil {
			return err
		}
		tags := nostr.Tags{{"h", ch}}
		if extra != nil {
			tags = append(tags, nostr.Tag(extra))
		}
		return publishAndPrint(in, &nostr.Event{Kind: kind, Tags: tags})
	}
}

// metaCmd sets one metadata field (topic, purpose) with kind 9002.
func metaCmd(field string) func(*inv) error {
	return func(in *inv) error {
		ch, err := needChannel(in)
		if err != nil {
			return err
		}
		if !in.p.has(field) {
			return userErr("--%s is required", field)
		}
		return publishAndPrint(in, &nostr.Event{Kind: workspace.KindEditMetadata, Tags: nostr.Tags{{"h", ch}, {field, in.p.str(field)}}})
	}
}

func runChannelsCreate(in *inv) error {
	name, err := need(in, "name")
	if err != nil {
		return err
	}
	typ := in.p.str("type")
	if typ == "" {
		typ = workspace.ChannelTypeStream
	}
	if typ != workspace.ChannelTypeStream && typ != workspace.ChannelTypeForum {
		return userErr("--type must be stream or forum, got %q", typ)
	}
	vis := in.p.str("visibility")
	if vis == "" {
		vis = workspace.VisibilityOpen
	}
	if vis != workspace.VisibilityOpen && vis != workspace.VisibilityPrivate {
		return userErr("--visibility must be open or private, got %q", vis)
	}
	id := workspace.NewUUID()
	tags := nostr.Tags{{"h", id}, {workspace.TagName, name}, {workspace.TagVisibility, vis}, {workspace.TagChannelType, typ}}
	if d := in.p.str("description"); d != "" {
		tags = append(tags, nostr.Tag{workspace.TagAbout, d})
	}
	if in.p.has("ttl") {
		n, err := in.p.nonNegative("ttl", 0)
		if err != nil {
			return err
		}
		tags = append(tags, nostr.Tag{"ttl", strconv.FormatInt(n, 10)})
	}
	res, err := signAndPublish(in, &nostr.Event{Kind: workspace.KindCreateGroup, Tags: tags})
	if err != nil {
		return err
	}
	return writeJSON(in.out, struct {
		relayclient.Result
		ChannelID string `json:"channel_id"`
	}{res, id})
}

func runAddMember(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	pkArg, err := need(in, "pubkey")
	if err != nil {
		return err
	}
	pk, err := parsePubkey(pkArg)
	if err != nil {
		return err
	}
	role := in.p.str("role")
	if role == "" {
		role = "member"
	}
	switch role {
	case "owner", "admin", "member", "guest", "bot":
	default:
		return userErr("--role must be owner, admin, member, guest or bot, got %q", role)
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindAddUser, Tags: nostr.Tags{{"h", ch}, {"p", pk}, {"role", role}}})
}

func runRemoveMember(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	pkArg, err := need(in, "pubkey")
	if err != nil {
		return err
	}
	pk, err := parsePubkey(pkArg)
	if err != nil {
		return err
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindRemoveUser, Tags: nostr.Tags{{"h", ch}, {"p", pk}}})
}

func runChannelsSearch(in *inv) error {
	q, err := need(in, "query")
	if err != nil {
		return err
	}
	type row struct {
		ChannelID   string `json:"channel_id"`
		Name        string `json:"name"`
		ChannelType string `json:"channel_type"`
		Visibility  string `json:"visibility"`
		Archived    bool   `json:"archived"`
		About       string `json:"about"`
		Topic       string `json:"topic"`
		Purpose     string `json:"purpose"`
	}
	out := []row{}
	seen := map[string]bool{}
	lq := strings.ToLower(q)
	err = pages(in, nostr.Filter{Kinds: []int{workspace.KindGroupMetadata}}, 0, func(ev *nostr.Event) error {
		d, name := tagValue(ev, "d"), tagValue(ev, workspace.TagName)
		ln := strings.ToLower(name)
		match := strings.Contains(ln, lq)
		if in.p.boolean("exact") {
			match = ln == lq
		}
		archived := hasTag(ev, workspace.TagArchived, "true")
		if d == "" || seen[d] || !match || (archived && !in.p.boolean("include-archived")) {
			return nil
		}
		seen[d] = true
		vis := workspace.VisibilityOpen
		if hasTag(ev, workspace.TagPrivate) {
			vis = workspace.VisibilityPrivate
		}
		out = append(out, row{d, name, firstNonEmpty(tagValue(ev, "t"), workspace.ChannelTypeStream), vis, archived,
			tagValue(ev, workspace.TagAbout), tagValue(ev, workspace.TagTopic), tagValue(ev, workspace.TagPurpose)})
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ChannelID < out[j].ChannelID
	})
	return writeJSON(in.out, out)
}
