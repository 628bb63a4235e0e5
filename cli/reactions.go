package cli

import (
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

func runReactAdd(in *inv) error {
	id, err := needEvent(in)
	if err != nil {
		return err
	}
	emoji, err := need(in, "emoji")
	if err != nil {
		return err
	}
	ev := &nostr.Event{Kind: workspace.KindReaction, Tags: nostr.Tags{{"e", id}}}
	if in.p.has("emoji-url") {
		u, err := url.Parse(in.p.str("emoji-url"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return userErr("--emoji-url must be an http(s) URL, got %q", in.p.str("emoji-url"))
		}
		code := strings.ToLower(strings.Trim(strings.TrimSpace(emoji), ":"))
		if !validShortcode(code) {
			return userErr("custom emoji shortcode must be 1-%d of [A-Za-z0-9_-], got %q", maxShortcodeChars, emoji)
		}
		ev.Content = ":" + code + ":"
		ev.Tags = append(ev.Tags, nostr.Tag{"emoji", code, u.String()})
	} else {
		if n := utf8.RuneCountInString(emoji); n > maxEmojiChars {
			return userErr("--emoji is %d characters, over the limit of %d", n, maxEmojiChars)
		}
		ev.Content = emoji
	}
	target, err := fetchTarget(in, id)
	if err != nil {
		return err
	}
	ev.Tags = append(channelTag(target), ev.Tags...)
	return publishAndPrint(in, ev)
}

// channelTag returns the h tag of target's channel, none for an event
// outside channels: the relay takes a reaction to a channel's event, and
// the deletion of that reaction, only with it, and serves them only to
// the channel's readers.
func channelTag(target *nostr.Event) nostr.Tags {
	if t := target.Tags.Find("h"); t != nil {
		return nostr.Tags{{"h", t[1]}}
	}
	return nostr.Tags{}
}

func validShortcode(s string) bool {
	if s == "" || len(s) > maxShortcodeChars {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(isNameByte(s[i]) && s[i] != '.') {
			return false
		}
	}
	return true
}

func runReactRemove(in *inv) error {
	id, err := needEvent(in)
	if err != nil {
		return err
	}
	emoji, err := need(in, "emoji")
	if err != nil {
		return err
	}
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindReaction}, Authors: []string{in.pubkey}, Tags: nostr.TagMap{"e": []string{id}}})
	if err != nil {
		return err
	}
	sortDescending(evs)
	for _, r := range evs {
		if r.Content == emoji && r.PubKey == in.pubkey {
			tags := channelTag(r)
			if len(tags) == 0 {
				// made before reactions carried their channel
				target, err := fetchTarget(in, id)
				if err != nil {
					return err
				}
				tags = channelTag(target)
			}
			return publishAndPrint(in, &nostr.Event{Kind: workspace.KindDeletion, Content: "", Tags: append(tags, nostr.Tag{"e", r.ID})})
		}
	}
	return otherErr("no reaction with emoji '%s' found for your pubkey on event %s", emoji, id)
}

// reactionGroup is one emoji's tally.
type reactionGroup struct {
	Emoji   string   `json:"emoji"`
	Count   int      `json:"count"`
	Pubkeys []string `json:"pubkeys"`
}

func runReactGet(in *inv) error {
	id, err := needEvent(in)
	if err != nil {
		return err
	}
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindReaction}, Tags: nostr.TagMap{"e": []string{id}}})
	if err != nil {
		return err
	}
	groups := map[string]*reactionGroup{}
	for _, r := range evs {
		emoji := r.Content
		if emoji == "" {
			emoji = "+"
		}
		g := groups[emoji]
		if g == nil {
			g = &reactionGroup{Emoji: emoji, Pubkeys: []string{}}
			groups[emoji] = g
		}
		npub, err := nostrkey.HexToNpub(r.PubKey)
		if err != nil || contains(g.Pubkeys, npub) {
			continue
		}
		g.Pubkeys = append(g.Pubkeys, npub)
		g.Count++
	}
	out := make([]reactionGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Emoji < out[j].Emoji })
	return writeJSON(in.out, map[string]any{"reactions": out})
}
