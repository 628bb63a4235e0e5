package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nipoa"
	"buzzbox/internal/workspace/relayclient"
)

// retryOnce runs f with a per-attempt timeout, once more after a pause.
func retryOnce[T any](ctx context.Context, each time.Duration, f func(context.Context) (T, error)) (T, error) {
	var zero T
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(contextRetryDelay):
			case <-ctx.Done():
				return zero, ctx.Err()
			}
		}
		actx, cancel := context.WithTimeout(ctx, each)
		var v T
		v, err = f(actx)
		cancel()
		if err == nil {
			return v, nil
		}
	}
	return zero, err
}

// channelFromMeta reads a kind 39000 event (§4.3).
func channelFromMeta(ev *nostr.Event) (info channelInfo, archived bool) {
	d := ev.Tags.GetD()
	info = channelInfo{ID: strings.ToLower(d), Name: "unknown", Type: "stream"}
	if t := ev.Tags.Find(workspace.TagName); len(t) >= 2 && t[1] != "" {
		info.Name = t[1]
	}
	tval := ""
	if t := ev.Tags.Find("t"); len(t) >= 2 {
		tval = t[1]
	}
	hidden := hasTag(ev.Tags, workspace.TagHidden)
	private := hasTag(ev.Tags, workspace.TagPrivate)
	switch {
	case tval == "dm" || hidden:
		info.Type = "dm"
	case tval == "private" || private:
		info.Type = "private"
	}
	if t := ev.Tags.Find(workspace.TagArchived); len(t) >= 2 && t[1] == "true" {
		archived = true
	}
	return info, archived
}

// discover finds the channels the agent belongs to (§4.3).
func discover(ctx context.Context, io *relayclient.Client, agent string) ([]channelInfo, error) {
	members, err := io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"p": {agent}}})
	if err != nil {
		return nil, fmt.Errorf("buzz-acp: discover channels: %w", err)
	}
	var ids []string
	seen := map[string]bool{}
	pair := map[string]bool{} // the channel's members are the agent and one other
	for _, ev := range members {
		d := strings.ToLower(ev.Tags.GetD())
		if workspace.IsUUID(d) && !seen[d] {
			seen[d] = true
			ids = append(ids, d)
			pair[d] = agentAndOne(ev, agent)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	metas, err := io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindGroupMetadata}, Tags: nostr.TagMap{"d": ids}})
	if err != nil {
		return nil, fmt.Errorf("buzz-acp: discover channel metadata: %w", err)
	}
	got := map[string]channelInfo{}
	skip := map[string]bool{}
	newest := map[string]nostr.Timestamp{}
	for _, ev := range metas {
		info, archived := channelFromMeta(ev)
		if !seen[info.ID] || ev.CreatedAt < newest[info.ID] {
			continue
		}
		newest[info.ID] = ev.CreatedAt
		if info.Type == "private" && pair[info.ID] {
			info.Type = "dm"
		}
		got[info.ID] = info
		skip[info.ID] = archived
	}
	var out []channelInfo
	for _, id := range ids {
		if skip[id] {
			continue
		}
		info, ok := got[id]
		if !ok {
			info = channelInfo{ID: id, Name: "unknown", Type: "unknown"}
		}
		out = append(out, info)
	}
	return out, nil
}

// agentAndOne reports whether a channel's members event (39002) lists
// exactly two members, agent one of them: a private channel of a person
// and the agent is its DM channel.
func agentAndOne(members *nostr.Event, agent string) bool {
	keys := map[string]bool{}
	for _, t := range members.Tags {
		if len(t) >= 2 && t[0] == "p" {
			keys[t[1]] = true
		}
	}
	return len(keys) == 2 && keys[agent]
}

// channelCache resolves channel metadata lazily and caches successes.
type channelCache struct {
	io    *relayclient.Client
	agent string // the agent's hex: a private channel of it and one person is a DM
	mu    sync.Mutex
	m     map[string]channelInfo
}

// peek returns what the cache holds for id, asking nobody; a nil cache
// holds nothing.
func (c *channelCache) peek(id string) (channelInfo, bool) {
	if c == nil {
		return channelInfo{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.m[id]
	return info, ok && info.Type != "unknown"
}

// forget drops id, so that the next get asks the relay again (the
// channel's members changed).
func (c *channelCache) forget(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

func (c *channelCache) put(info channelInfo) {
	c.mu.Lock()
	c.m[info.ID] = info
	c.mu.Unlock()
}

// get returns the channel's info; ok is false when it could not be resolved.
func (c *channelCache) get(ctx context.Context, id string) (channelInfo, bool) {
	c.mu.Lock()
	info, ok := c.m[id]
	c.mu.Unlock()
	if ok && info.Type != "unknown" {
		return info, true
	}
	evs, err := retryOnce(ctx, contextFetchTO, func(ctx context.Context) ([]*nostr.Event, error) {
		return c.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindGroupMetadata}, Tags: nostr.TagMap{"d": {id}}, Limit: 1})
	})
	if err != nil || len(evs) == 0 {
		if ok {
			return info, false
		}
		return channelInfo{ID: id, Name: "unknown", Type: "unknown"}, false
	}
	info, _ = channelFromMeta(evs[0])
	info.ID = id
	if info.Type == "private" && c.agent != "" {
		mem, err := retryOnce(ctx, contextFetchTO, func(ctx context.Context) ([]*nostr.Event, error) {
			return c.io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindGroupMembers}, Tags: nostr.TagMap{"d": {id}}, Limit: 1})
		})
		if err == nil && len(mem) > 0 && agentAndOne(mem[0], c.agent) {
			info.Type = "dm"
		}
	}
	c.put(info)
	return info, true
}

// fetchProfilesErr loads kind 0 profiles for pubkeys (§11.6).
func fetchProfilesErr(ctx context.Context, io *relayclient.Client, pubkeys []string) (map[string]*profile, error) {
	out := map[string]*profile{}
	var keys []string
	seen := map[string]bool{}
	for _, p := range pubkeys {
		if nostrkey.IsLowerHex(p, 64) && !seen[p] {
			seen[p] = true
			keys = append(keys, p)
		}
	}
	if len(keys) == 0 {
		return out, nil
	}
	evs, err := retryOnce(ctx, contextFetchTO, func(ctx context.Context) ([]*nostr.Event, error) {
		return io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindProfile}, Authors: keys})
	})
	if err != nil {
		return out, err
	}
	for _, ev := range evs {
		if old := out[ev.PubKey]; old != nil && old.Event.CreatedAt >= ev.CreatedAt {
			continue
		}
		out[ev.PubKey] = profileOf(ev)
	}
	return out, nil
}

func profileOf(ev *nostr.Event) *profile {
	p := &profile{Label: labelFromProfile(ev.Content), Event: ev}
	var meta struct {
		Bot bool `json:"bot"`
	}
	if json.Unmarshal([]byte(ev.Content), &meta) == nil && meta.Bot {
		p.Agent = true
	}
	for _, t := range ev.Tags {
		if len(t) == 4 && t[0] == nipoa.TagName {
			p.Agent = true
			if a, ok := verifiedAttestation(t, ev.PubKey); ok {
				p.Owner, p.Attestation = a.Owner.Hex(), a
			}
		}
	}
	return p
}

// renderContext turns fetched history into its prompt section (§11.4):
// per message a header line the harness writes, with the author's role
// from its pubkey (owner and agent are the configured keys), then the
// content, every line of it indented, so no content starts a line.
func renderContext(header string, evs []*nostr.Event, profiles map[string]*profile, owner, agent string) *contextSection {
	cs := &contextSection{Header: header}
	for i, ev := range evs {
		cs.Lines = append(cs.Lines, fmt.Sprintf("\n[%d] %s %s (%s):\n%s%s", i+1, role(ev.PubKey, owner, agent),
			actor(ev.PubKey, profiles), rfc3339(ev.CreatedAt), contentIndent, indentLines(ev.Content)))
	}
	return cs
}

// fetchContext fetches the thread or DM history (§11.4) and returns the
// section header and the events in order; "" when there is none.
func fetchContext(ctx context.Context, io *relayclient.Client, last *Event, ch channelInfo, agent string, limit int) (string, []*nostr.Event) {
	if limit <= 0 {
		return "", nil
	}
	root, _ := last.thread()
	kinds := []int{workspace.KindStream, workspace.KindStreamV2}
	switch {
	case root != "":
		if !nostrkey.IsLowerHex(root, 64) {
			return "", nil
		}
		replies := nostr.Filter{Kinds: kinds, Tags: nostr.TagMap{"e": {root}, "h": {ch.ID}}, Limit: limit + 1}
		mine := replies
		mine.Authors = []string{agent}
		mine.Limit = 1
		evs, err := retryOnce(ctx, contextFetchTO, func(ctx context.Context) ([]*nostr.Event, error) {
			return io.Query(ctx, nostr.Filter{IDs: []string{root}, Limit: 1}, replies, mine)
		})
		if err != nil {
			return "", nil
		}
		var rootEv, own *nostr.Event
		byID := map[string]*nostr.Event{}
		for _, ev := range evs {
			switch {
			case ev.ID == root:
				rootEv = ev
			default:
				if ev.PubKey == agent && (own == nil || ev.CreatedAt > own.CreatedAt) {
					own = ev
				}
				byID[ev.ID] = ev
			}
		}
		list := make([]*nostr.Event, 0, len(byID))
		for _, ev := range byID {
			list = append(list, ev)
		}
		sortEvents(list)
		truncated := len(list) > limit
		fetched := len(list)
		if truncated {
			list = list[len(list)-limit:]
		}
		if own != nil && !containsEvent(list, own.ID) && len(list) > 0 {
			list[0] = own
			sortEvents(list)
		}
		shown := len(list)
		var all []*nostr.Event
		if rootEv != nil {
			all = append(all, rootEv)
			shown++
		}
		all = append(all, list...)
		total := shown
		if truncated {
			total = fetched + 1
			cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			n, err := io.Count(cctx, nostr.Filter{Kinds: kinds, Tags: nostr.TagMap{"e": {root}, "h": {ch.ID}}})
			cancel()
			if err == nil && int(n)+1 > total {
				total = int(n) + 1
			}
		}
		hdr := fmt.Sprintf("[Thread Context (%d of %d messages", shown, total)
		if truncated {
			hdr += ", truncated"
		}
		return hdr + ")]", all
	case ch.Type == "dm":
		evs, err := retryOnce(ctx, contextFetchTO, func(ctx context.Context) ([]*nostr.Event, error) {
			return io.Query(ctx, nostr.Filter{Kinds: kinds, Tags: nostr.TagMap{"h": {ch.ID}}, Limit: limit})
		})
		if err != nil {
			return "", nil
		}
		sortEvents(evs)
		shown := len(evs)
		total := shown
		trunc := ""
		if shown >= limit {
			total = shown + 1
			trunc = ", truncated"
		}
		return fmt.Sprintf("[Conversation Context (%d of %d messages%s)]", shown, total, trunc), evs
	}
	return "", nil
}

func sortEvents(evs []*nostr.Event) {
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].CreatedAt != evs[j].CreatedAt {
			return evs[i].CreatedAt < evs[j].CreatedAt
		}
		return evs[i].ID < evs[j].ID
	})
}

func containsEvent(evs []*nostr.Event, id string) bool {
	for _, e := range evs {
		if e.ID == id {
			return true
		}
	}
	return false
}

// conversationKey is the NIP-44 key between the agent and the owner.
func conversationKey(sec *nostrkey.Secret, owner string) ([32]byte, error) {
	skHex, err := sec.AppendHex(nil)
	if err != nil {
		return [32]byte{}, err
	}
	return nip44.GenerateConversationKey(owner, string(skHex))
}

const memoryHeader = "[Agent Memory — core]"

// memoryNudge is shown when the agent has no core memory yet.
const memoryNudge = memoryHeader + "\nYou have no core memory yet. Create one with `buzz mem set core \"…\"` holding who you are, " +
	"the rules you follow and your current goals; ask your user about yourself if you do not know."

// fetchCoreMemory returns the core memory section (§12): the profile, the
// nudge when there is none, or "" when the answer is unknown.
func fetchCoreMemory(ctx context.Context, io *relayclient.Client, ownerKey func() ([32]byte, error), agent, owner string) string {
	key, err := ownerKey()
	if err != nil {
		return ""
	}
	d := workspace.MemoryDTag(key, workspace.MemoryCoreSlug)
	ctx, cancel := context.WithTimeout(ctx, contextFetchTO)
	defer cancel()
	evs, err := io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindEngram}, Authors: []string{agent},
		Tags: nostr.TagMap{"d": {d}, "p": {owner}}, Limit: 16})
	if err != nil {
		return ""
	}
	if len(evs) == 0 {
		return memoryNudge
	}
	type cand struct {
		ev   *nostr.Event
		body map[string]json.RawMessage
	}
	var best *cand
	for _, ev := range evs {
		if ev.PubKey != agent || ev.Kind != workspace.KindEngram {
			continue
		}
		plain, err := nip44.Decrypt(ev.Content, key)
		if err != nil {
			continue
		}
		var body map[string]json.RawMessage
		if json.Unmarshal([]byte(plain), &body) != nil {
			continue
		}
		if best == nil || ev.CreatedAt > best.ev.CreatedAt || ev.CreatedAt == best.ev.CreatedAt && ev.ID < best.ev.ID {
			best = &cand{ev, body}
		}
	}
	if best == nil {
		return ""
	}
	var slug, prof string
	json.Unmarshal(best.body["slug"], &slug)
	if slug == workspace.MemoryCoreSlug && json.Unmarshal(best.body["profile"], &prof) == nil {
		return memoryHeader + "\n" + prof
	}
	return memoryNudge
}

// fetchCanvas returns the canvas section of a channel, or "".
func fetchCanvas(ctx context.Context, io *relayclient.Client, channel string) string {
	ctx, cancel := context.WithTimeout(ctx, contextFetchTO)
	defer cancel()
	evs, err := io.Query(ctx, nostr.Filter{Kinds: []int{workspace.KindCanvas}, Tags: nostr.TagMap{"h": {channel}}, Limit: 1})
	if err != nil || len(evs) == 0 {
		return ""
	}
	sortEvents(evs)
	ev := evs[len(evs)-1]
	if ev.Kind != workspace.KindCanvas || channelOf(ev) != channel || strings.TrimSpace(ev.Content) == "" {
		return ""
	}
	return canvasSection(ev, channel)
}

// profileCache keeps kind 0 lookups for a short while: a busy channel
// would otherwise query the same authors for every turn.
type profileCache struct {
	io *relayclient.Client
	mu sync.Mutex
	m  map[string]cachedProfile
}

type cachedProfile struct {
	p  *profile // nil: no profile
	at time.Time
}

// profileTTL bounds how stale a display name in a prompt may be.
const profileTTL = 60 * time.Second

// maxCachedProfiles bounds the cache; it is cleared when full.
const maxCachedProfiles = 4096

func (c *profileCache) get(ctx context.Context, pubkeys []string) map[string]*profile {
	out := map[string]*profile{}
	var missing []string
	now := time.Now()
	c.mu.Lock()
	for _, k := range pubkeys {
		if e, ok := c.m[k]; ok && now.Sub(e.at) < profileTTL {
			if e.p != nil {
				out[k] = e.p
			}
			continue
		}
		missing = append(missing, k)
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out
	}
	got, err := fetchProfilesErr(ctx, c.io, missing)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > maxCachedProfiles {
		c.m = map[string]cachedProfile{}
	}
	for _, k := range missing {
		p := got[k]
		if p != nil {
			out[k] = p
		}
		if err == nil {
			c.m[k] = cachedProfile{p: p, at: now}
		}
	}
	return out
}

// hasTag reports a tag with the given name, of any length (["private"]
// carries no value).
func hasTag(tags nostr.Tags, name string) bool {
	for _, t := range tags {
		if len(t) >= 1 && t[0] == name {
			return true
		}
	}
	return false
}
