package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"buzzbox/agent/llm"
	"buzzbox/agent/mcpclient"
)

// wireBytes is an item's size for the history budget.
func wireBytes(m *llm.Message) int {
	switch m.Role {
	case llm.RoleUser:
		n := len(m.Text)
		for _, im := range m.Images {
			n += len(im.Data) + len(im.MIME)
		}
		return n
	case llm.RoleAssistant:
		n := len(m.Text) + len(m.ReasoningDetails) + len(m.ReasoningContent)
		for _, t := range m.Thinking {
			n += len(t)
		}
		for _, c := range m.Calls {
			n += len(c.ID) + len(c.Name) + len(c.Args)
			for k, v := range c.Extra {
				n += len(k) + len(v)
			}
		}
		return n
	}
	n := len(m.Result.CallID)
	for _, p := range m.Result.Parts {
		if p.Image != nil {
			n += len(p.Image.Data) + len(p.Image.MIME)
		} else {
			n += len(p.Text)
		}
	}
	return n
}

// pressureBytes is an item's size for the handoff gate: like wireBytes but
// an image counts as imageContextBytes, close to what it costs in tokens.
func pressureBytes(m *llm.Message) int {
	if m.Role == llm.RoleUser {
		n := len(m.Text)
		for _, im := range m.Images {
			n += imageContextBytes + len(im.MIME)
		}
		return n
	}
	if m.Role != llm.RoleTool {
		return wireBytes(m)
	}
	n := len(m.Result.CallID)
	for _, p := range m.Result.Parts {
		if p.Image != nil {
			n += imageContextBytes + len(p.Image.MIME)
		} else {
			n += len(p.Text)
		}
	}
	return n
}

func totalBytes(h []llm.Message, size func(*llm.Message) int) int {
	n := 0
	for i := range h {
		n += size(&h[i])
	}
	return n
}

// evict drops whole oldest turns (everything before the next user item at
// index ≥ 1) while the history is over budget. A turn holds its tool calls
// and their results, so a pair is never split; the newest user turn stays.
func evict(h []llm.Message, budget int) ([]llm.Message, bool) {
	total := totalBytes(h, wireBytes)
	changed := false
	for total > budget {
		next := -1
		for i := 1; i < len(h); i++ {
			if h[i].Role == llm.RoleUser {
				next = i
				break
			}
		}
		if next < 0 {
			break
		}
		total -= totalBytes(h[:next], wireBytes)
		h = h[next:]
		changed = true
	}
	return h, changed
}

// truncateMiddle keeps the head and tail of s within max bytes, with a
// marker saying how much went missing. The result is valid UTF-8 (when s
// is) and never longer than max. Head and tail, because the identity of
// output is at its top and the verdict at its bottom.
func truncateMiddle(s string, max int) string {
	if len(s) <= max {
		return s
	}
	keep := max - elisionAllowance
	if keep <= 0 {
		return cutHead(s, max)
	}
	headN := (keep + 1) / 2
	tailN := keep / 2
	head := cutHead(s, headN)
	start := len(s) - tailN
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	tail := s[start:]
	elided := len(s) - len(head) - len(tail)
	return fmt.Sprintf("%s\n[... %d of %d bytes elided from tool result ...]\n%s", head, elided, len(s), tail)
}

// cutHead returns the longest prefix of s of at most n bytes ending on a
// rune boundary.
func cutHead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func clip(s string, n int) string { return cutHead(s, n) }

// shapeResult turns MCP content into result parts within the text budget
// and the total budget: text middle-elided, images kept whole while they
// fit, other kinds summarised as short notes.
func shapeResult(content []mcpclient.Content, textBudget, totalBudget int) []llm.Part {
	var parts []llm.Part
	var pending []string
	textLeft, totalLeft := textBudget, totalBudget
	flush := func() {
		if len(pending) == 0 {
			return
		}
		t := truncateMiddle(strings.Join(pending, "\n"), max(0, min(textLeft, totalLeft)))
		pending = nil
		textLeft -= len(t)
		totalLeft -= len(t)
		parts = append(parts, llm.Part{Text: t})
	}
	for _, c := range content {
		switch c.Type {
		case "text":
			pending = append(pending, c.Text)
		case "image":
			flush()
			size := len(c.Data) + len(c.MimeType)
			if size <= totalLeft {
				parts = append(parts, llm.Part{Image: &llm.Image{Data: c.Data, MIME: c.MimeType}})
				totalLeft -= size
			} else {
				pending = append(pending, fmt.Sprintf("[image elided: %s, %d base64 bytes exceeds remaining tool-result budget]", clip(c.MimeType, markerFieldCap), len(c.Data)))
			}
		case "audio":
			pending = append(pending, fmt.Sprintf("[audio elided: %s, %d bytes]", clip(c.MimeType, markerFieldCap), len(c.Data)))
		case "resource_link":
			pending = append(pending, fmt.Sprintf("[resource: %s]", clip(c.URI, markerFieldCap)))
		case "resource":
			pending = append(pending, "[resource elided]")
		}
	}
	flush()
	return parts
}

// lossyText renders parts as text: images become a short note.
func lossyText(parts []llm.Part) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Image != nil {
			fmt.Fprintf(&b, "[image: %s, %d base64 bytes]", p.Image.MIME, len(p.Image.Data))
		} else {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
