package harness

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/acp"
	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipoa"
)

// channelInfo is what discovery knows about a channel.
type channelInfo struct {
	ID   string
	Name string // "unknown" when metadata is missing
	Type string // stream, private, dm or unknown
}

// display is "<name> (#<uuid>)" when metadata is known, else the UUID.
func (c channelInfo) display() string {
	if c.Name != "" && c.Name != "unknown" {
		return c.Name + " (#" + c.ID + ")"
	}
	return c.ID
}

// isDM treats unknown types as DMs (fail closed, §6.2).
func (c channelInfo) isDM() bool { return c.Type == "dm" || c.Type == "unknown" || c.Type == "" }

// profile is the part of a kind 0 the prompt uses.
type profile struct {
	Label string // sanitised display name or nip05; empty none
	Agent bool   // carries a 4-element auth tag, or says "bot": true (NIP-24)
	Owner string // owner named by that tag
	// Attestation is that tag, verified for the profile's author; nil when
	// absent or invalid. Its conditions bound what it vouches for.
	Attestation *nipoa.Tag
	Event       *nostr.Event
}

// labelFromProfile applies §11.6: display_name, else name when the
// display_name key is absent, else nip05.
func labelFromProfile(content string) string {
	var m map[string]any
	if json.Unmarshal([]byte(content), &m) != nil {
		return ""
	}
	str := func(k string) string {
		s, _ := m[k].(string)
		return sanitizeLabel(s)
	}
	dn := str("display_name")
	if _, has := m["display_name"]; !has {
		dn = str("name")
	}
	if dn != "" {
		return dn
	}
	return str("nip05")
}

func sanitizeLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp) {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	return truncRunes(strings.TrimSpace(s), maxProfileLabelChars)
}

// promptInput is everything format needs for one channel turn.
type promptInput struct {
	Batch    []*Event
	Parked   []*Event // cancelled events merged into this turn
	Reason   string   // "steer" or "interrupt" for merged turns
	Channel  channelInfo
	Profiles map[string]*profile
	Context  *contextSection // nil = none
	Agent    string          // agent hex
	Owner    string          // the owner's hex, from the configuration; "" none
	Legacy   []string        // system-prompt sections for agents without support
	// PRs holds, by event id, the pull request a comment in Batch is on
	// (a pull request wake); a nil entry when it could not be read.
	PRs map[string]*prContext
}

// contextSection is the fetched conversation history.
type contextSection struct {
	Header string
	Lines  []string
}

func (cs *contextSection) text() string {
	return cs.Header + strings.Join(cs.Lines, "")
}

func rfc3339(ts nostr.Timestamp) string {
	return time.Unix(int64(ts), 0).UTC().Format(time.RFC3339)
}

func npubOf(hex string) string {
	pk, err := nostrkey.ParsePublic(hex)
	if err != nil {
		return hex
	}
	return pk.Npub()
}

// actor renders `"<label>" (<hex>)` or the bare hex. The label is
// quoted (strconv.Quote) so that a display name cannot pass for the
// parts around it.
func actor(hex string, profiles map[string]*profile) string {
	if p := profiles[hex]; p != nil && p.Label != "" {
		return strconv.Quote(p.Label) + " (" + hex + ")"
	}
	return hex
}

// Roles the prompt gives an author, from its verified pubkey alone: no
// display name or profile claim makes anyone the owner.
const (
	roleOwner  = "owner"
	roleYou    = "you"
	roleMember = "member"
)

// role is what hex is to this harness: its owner, its own agent, or any
// other member.
func role(hex, owner, agent string) string {
	switch {
	case owner != "" && hex == owner:
		return roleOwner
	case hex == agent:
		return roleYou
	}
	return roleMember
}

// contentIndent starts every line of a message's content after the first
// line the harness writes for it. No line the harness writes starts with
// a space, so no content can pass for one of them.
const contentIndent = "  "

// indentLines returns content with every line break normalised to \n and
// contentIndent before each line but the first. Every break a reader may
// take for a new line counts: \r\n, \r, \n, \v, \f, U+0085, U+2028 and
// U+2029.
func indentLines(content string) string {
	var b strings.Builder
	b.Grow(len(content))
	for i := 0; i < len(content); {
		r, n := utf8.DecodeRuneInString(content[i:])
		switch r {
		case '\r', '\n', '\v', '\f', '\u0085', '\u2028', '\u2029':
			if r == '\r' && strings.HasPrefix(content[i+n:], "\n") {
				n++
			}
			b.WriteString("\n" + contentIndent)
		default:
			b.WriteString(content[i : i+n])
		}
		i += n
	}
	return b.String()
}

// eventBlock renders §11.5; owner and agent give the From line its role.
func eventBlock(e *Event, ch channelInfo, profiles map[string]*profile, withChannel bool, owner, agent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Event ID: %s\n", e.ID)
	if withChannel {
		fmt.Fprintf(&b, "Channel: %s\n", ch.display())
	}
	fmt.Fprintf(&b, "Kind: %d\n", e.Kind)
	npub := npubOf(e.PubKey)
	who := role(e.PubKey, owner, agent)
	if p := profiles[e.PubKey]; p != nil && p.Label != "" {
		fmt.Fprintf(&b, "From: %s %q (npub: %s, hex: %s)\n", who, p.Label, npub, e.PubKey)
	} else {
		fmt.Fprintf(&b, "From: %s %s (hex: %s)\n", who, npub, e.PubKey)
	}
	fmt.Fprintf(&b, "Time: %s\n", rfc3339(e.CreatedAt))
	fmt.Fprintf(&b, "Content: %s\n", indentLines(e.Content))
	tags := e.Tags
	if tags == nil {
		tags = nostr.Tags{}
	}
	tj, _ := json.Marshal(tags)
	fmt.Fprintf(&b, "Tags: %s", tj)
	root, parent := e.thread()
	var parsed []string
	if parent != "" {
		parsed = append(parsed, "parent="+parent)
	}
	if root != "" {
		parsed = append(parsed, "root="+root)
	}
	if ps := e.pTags(); len(ps) > 0 {
		var m []string
		for _, p := range ps {
			m = append(m, actor(p, profiles))
		}
		parsed = append(parsed, "mentions=["+strings.Join(m, ", ")+"]")
	}
	if len(parsed) > 0 {
		fmt.Fprintf(&b, "\nParsed: %s", strings.Join(parsed, ", "))
	}
	return b.String()
}

// humanFacing: the sender is not an agent, or some p-tagged pubkey is not one.
func humanFacing(e *Event, profiles map[string]*profile, agent string) bool {
	isAgent := func(h string) bool { p := profiles[h]; return p != nil && p.Agent }
	if !isAgent(e.PubKey) {
		return true
	}
	for _, p := range e.pTags() {
		if p != agent && !isAgent(p) {
			return true
		}
	}
	return false
}

const replyRule = "IMPORTANT: reply with `buzz messages send --channel %s --reply-to %s`. " +
	"Only leave out --reply-to when the person explicitly asks for a top-level, channel-root or broadcast post; if unsure, ask."

// contextBlock renders §11.3 from the newest event.
func contextBlock(in *promptInput) string {
	last := in.Batch[len(in.Batch)-1]
	ch := in.Channel
	root, parent := last.thread()
	var b strings.Builder
	b.WriteString("[Context]\n")
	human := humanFacing(last, in.Profiles, in.Agent)
	switch {
	case isPRWake(last.Woken):
		b.WriteString("Scope: pull request\n")
		fmt.Fprintf(&b, "Channel: %s\n", ch.display())
		pr := tagOf(&last.Event, "E")
		fmt.Fprintf(&b, "Hint: run `buzz pr view --pr %s` for the whole conversation and `buzz pr diff --pr %s` for the change.\n", pr, pr)
		fmt.Fprintf(&b, "IMPORTANT: answer on the pull request with `buzz pr comment --pr %s --reply-to %s --body -`, not with a channel message.", pr, last.ID)
	case ch.Type == "dm":
		b.WriteString("Scope: dm\n")
		fmt.Fprintf(&b, "Channel: %s\n", ch.display())
		if root != "" {
			fmt.Fprintf(&b, "Thread root: %s\n", root)
			if parent != root {
				fmt.Fprintf(&b, "Parent: %s\n", parent)
			}
			hint := "Hint: run `buzz messages thread --channel %s --event %s` for the whole thread"
			if in.Context != nil {
				hint += "; recent messages are included below"
			}
			fmt.Fprintf(&b, hint+".\n", ch.ID, root)
			fmt.Fprintf(&b, replyRule, ch.ID, last.ID)
		} else {
			hint := "Hint: run `buzz messages get --channel %s` for the conversation"
			if in.Context != nil {
				hint += "; recent messages are included below"
			}
			fmt.Fprintf(&b, hint+".", ch.ID)
		}
	case root != "":
		b.WriteString("Scope: thread\n")
		fmt.Fprintf(&b, "Channel: %s\n", ch.display())
		fmt.Fprintf(&b, "Thread root: %s\n", root)
		if parent != root {
			fmt.Fprintf(&b, "Parent: %s\n", parent)
		}
		if in.Context != nil {
			fmt.Fprintf(&b, "Hint: recent thread messages are included below; run `buzz messages thread --channel %s --event %s` for the full history.", ch.ID, root)
		} else {
			fmt.Fprintf(&b, "Hint: run `buzz messages thread --channel %s --event %s` to read the thread.", ch.ID, root)
		}
		if human {
			b.WriteString("\n")
			fmt.Fprintf(&b, replyRule, ch.ID, root)
		}
	default:
		b.WriteString("Scope: channel\n")
		fmt.Fprintf(&b, "Channel: %s\n", ch.display())
		fmt.Fprintf(&b, "Hint: run `buzz messages get --channel %s` if you need recent messages.", ch.ID)
		if human {
			b.WriteString("\n")
			fmt.Fprintf(&b, replyRule, ch.ID, last.ID)
			b.WriteString(" The triggering message becomes the root of a new thread; do not reply in older threads.")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Merge framing (§11.2).
const (
	steerClosing = "[Note]\nA new message arrived while you were working. Keep going with the work in progress and fold the new message in if it is relevant; " +
		"otherwise acknowledge it briefly and carry on. Your partial work from before was not kept: the section above holds the original request."
	interruptClosing = "[Note]\nYour earlier request was interrupted before it completed. Address the new request; " +
		"if it is unrelated you may briefly acknowledge the interruption."
)

// formatPrompt builds the per-turn blocks in the spec's order.
func formatPrompt(in *promptInput) []acp.ContentBlock {
	var blocks []acp.ContentBlock
	add := func(s string) {
		if s != "" {
			blocks = append(blocks, acp.TextBlock(s))
		}
	}
	for _, s := range in.Legacy {
		add(s)
	}
	add(contextBlock(in))
	if in.Context != nil {
		add(in.Context.text())
	}
	block := func(e *Event) string {
		s := eventBlock(e, in.Channel, in.Profiles, true, in.Owner, in.Agent)
		if p := in.PRs[e.ID]; p != nil {
			s += "\n\n" + prBlock(e, p, in.Agent)
		}
		return s
	}
	numbered := func(header string, evs []*Event) string {
		var b strings.Builder
		b.WriteString(header)
		for i, e := range evs {
			fmt.Fprintf(&b, "\n\n--- Event %d (%s) ---\n%s", i+1, e.Tag, block(e))
		}
		return b.String()
	}
	merged := len(in.Parked) > 0
	interrupt := in.Reason == "interrupt"
	if merged {
		h := "[What you were working on]"
		if interrupt {
			h = "[Previous request — interrupted before completion]"
		}
		add(numbered(h, in.Parked))
	}
	n := len(in.Batch)
	switch {
	case !merged && n == 1:
		add("[Buzz event: " + in.Batch[0].Tag + "]\n" + block(in.Batch[0]))
	case !merged:
		add(numbered(fmt.Sprintf("[Buzz events — %d events]", n), in.Batch))
	case n == 1 && interrupt:
		add(numbered("[New request — supersedes previous]", in.Batch))
	case n == 1:
		add(numbered("[New message — arrived while you were working]", in.Batch))
	case interrupt:
		add(numbered(fmt.Sprintf("[New request — supersedes previous — %d events]", n), in.Batch))
	default:
		add(numbered(fmt.Sprintf("[New messages — arrived while you were working — %d events]", n), in.Batch))
	}
	if merged {
		if interrupt {
			add(interruptClosing)
		} else {
			add(steerClosing)
		}
	}
	if !merged && n == 1 {
		if cmd := slashCommand(in.Batch[0].Content, in.Profiles); cmd != "" {
			blocks = append([]acp.ContentBlock{acp.TextBlock(cmd)}, blocks...)
		}
	}
	return blocks
}

// steerBlocks renders one event for a native steer (§7.4).
func steerBlocks(e *Event, owner, agent string) []acp.ContentBlock {
	text := "[New message — arrived while you were working]\n\n[Buzz event: " + e.Tag + "]\n" +
		eventBlock(e, channelInfo{}, nil, false, owner, agent) + "\n\n" + steerClosing
	return []acp.ContentBlock{acp.TextBlock(text)}
}

// slashCommand strips leading mention tokens and returns the rest when it
// is a /command (§11.7).
func slashCommand(content string, profiles map[string]*profile) string {
	var names []string
	for _, p := range profiles {
		if p.Label != "" {
			names = append(names, p.Label)
		}
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	rest := strings.TrimLeft(content, " \t\r\n")
	for {
		before := rest
		switch {
		case strings.HasPrefix(rest, "nostr:npub1"), strings.HasPrefix(rest, "nostr:nprofile1"):
			i := strings.IndexFunc(rest, unicode.IsSpace)
			if i < 0 {
				return ""
			}
			rest = rest[i:]
		case strings.HasPrefix(rest, "@"):
			matched := false
			for _, n := range names {
				if len(rest) > len(n) && strings.EqualFold(rest[1:1+len(n)], n) {
					after := rest[1+len(n):]
					if after == "" || unicode.IsSpace(rune(after[0])) {
						rest = after
						matched = true
						break
					}
				}
			}
			if !matched {
				m := mentionToken().FindString(rest)
				if m == "" {
					return ""
				}
				rest = rest[len(m):]
			}
		}
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest == before {
			break
		}
	}
	if len(rest) >= 2 && rest[0] == '/' && (rest[1] < 0x80 && (unicode.IsLetter(rune(rest[1])) || unicode.IsDigit(rune(rest[1])))) {
		return rest
	}
	return ""
}

var mentionToken = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^@[A-Za-z0-9._-]+`) })

// systemParts are the session-level sections (§11.1).
type systemParts struct {
	Cwd     string
	Base    string
	Persona string
	Team    string
	Memory  string // already headed
	Canvas  string // already headed
}

func workspaceSection(cwd string) string {
	return "[Workspace]\nYour working directory is " + cwd + ". It holds AGENTS.md, RESEARCH/, PLANS/, GUIDES/, WORK_LOGS/ and OUTBOX/, " +
		"and repositories you clone go under " + cwd + "/REPOS/. Look for these only there: do not search $HOME or anywhere else for them."
}

// sections returns the parts in order; withWorkspace is false for legacy agents.
func (s systemParts) sections(withWorkspace bool) []string {
	var out []string
	base := strings.TrimRightFunc(s.Base, unicode.IsSpace)
	if withWorkspace && base != "" && strings.HasPrefix(s.Cwd, "/") && s.Cwd != "/" {
		out = append(out, workspaceSection(s.Cwd))
	}
	if base != "" {
		out = append(out, "[Base]\n"+base)
	}
	if strings.TrimSpace(s.Persona) != "" {
		out = append(out, "[System]\n"+s.Persona)
	}
	if s.Team != "" {
		out = append(out, "[Team Instructions]\n"+s.Team)
	}
	if s.Memory != "" {
		out = append(out, s.Memory)
	}
	if s.Canvas != "" {
		out = append(out, s.Canvas)
	}
	return out
}

func (s systemParts) text() string { return strings.Join(s.sections(true), "\n\n") }

// heartbeatText is the default heartbeat prompt (§11.8).
func heartbeatText(now time.Time) string {
	return "[System: Heartbeat]\nTime: " + now.UTC().Format(time.RFC3339) + "\n" +
		"No message arrived for you this turn; this is a scheduled check.\n" +
		"1. Run `buzz feed get --types needs_action`, then `buzz feed get --types mentions`.\n" +
		"2. Act on what you find, for example `buzz workflows approve --token <UUID>` or `buzz messages send --channel <UUID> --content - [--reply-to <id>]`.\n" +
		"3. If nothing is pending, end the turn at once.\n" +
		"Do not run `buzz channels list` or `buzz messages search` without a reason, and never invent work."
}

// canvasSection renders §11.1 part 6.
func canvasSection(ev *nostr.Event, channel string) string {
	return "[Channel Canvas]\nCanvas revision (event ID): " + ev.ID + "\nLast modified: " + rfc3339(ev.CreatedAt) +
		"\nRead it with `buzz canvas get --channel " + channel + "`."
}

// sessionTitle is "<title> · #<channel>" within 80 characters (§9.3).
func sessionTitle(title string, ch channelInfo) string {
	if title == "" {
		return ""
	}
	if ch.isDM() || ch.Name == "" || ch.Name == "unknown" {
		return title
	}
	prefix := title + " · #"
	room := maxSessionTitleChars - len([]rune(prefix))
	if room <= 0 {
		return title
	}
	return prefix + truncRunes(ch.Name, room)
}
