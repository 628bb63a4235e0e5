package devmcp

import (
	"sort"
	"strconv"
	"strings"

	"github.com/hexops/gotextdiff/myers"
	"github.com/hexops/gotextdiff/span"
)

// region is a changed stretch of whole lines: bytes [oldStart, oldEnd) of
// the old text became bytes [newStart, newEnd) of the new text. Both ranges
// start at the beginning of a line and end after a newline or at the end of
// the text.
type region struct {
	oldStart, oldEnd int
	newStart, newEnd int
}

// editRegions returns the changed line regions of replacing oldLen bytes at
// each offset in matches (sorted, non-overlapping) by newLen bytes. Matches
// that share a line share a region. Knowing where the edits are keeps the
// diff linear in the file size whatever the number of matches.
func editRegions(old string, matches []int, oldLen, newLen int) []region {
	delta := newLen - oldLen
	var out []region
	for k, m := range matches {
		last := m + oldLen - 1 // oldLen > 0: str_replace refuses an empty old_str
		if n := len(out); n > 0 && m < out[n-1].oldEnd {
			r := &out[n-1]
			if last >= r.oldEnd {
				r.oldEnd = lineEndAfter(old, last)
			}
			r.newEnd = r.oldEnd + (k+1)*delta
			continue
		}
		floor := 0
		if n := len(out); n > 0 {
			floor = out[n-1].oldEnd
		}
		start := floor
		if i := strings.LastIndexByte(old[floor:m], '\n'); i >= 0 {
			start = floor + i + 1
		}
		end := lineEndAfter(old, last)
		out = append(out, region{oldStart: start, oldEnd: end, newStart: start + k*delta, newEnd: end + (k+1)*delta})
	}
	return out
}

// lineEndAfter returns the offset just past the newline ending the line that
// holds byte i, or len(s) when that line is the unterminated last one.
func lineEndAfter(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(s)
}

// splitAfterLines splits s into lines that keep their "\n"; a final line
// without one is kept as is; "" has no lines.
func splitAfterLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// change replaces old lines [at, at+del) by ins.
type change struct {
	at, del int
	ins     []string
}

// unifiedDiff renders the change from old to new, whose differences lie
// inside regions, as a GNU unified diff with diffContext lines of context,
// headed "--- a/<path>" and "+++ b/<path>" with the leading slash of an
// absolute path dropped, as git writes them ("a/tmp/x", not "a//tmp/x").
// Output stops before a hunk that would take it past maxDiffBytes, with a
// "[diff truncated]" line.
func unifiedDiff(path, old, new string, regions []region) string {
	var b strings.Builder
	p := strings.TrimPrefix(path, "/")
	b.WriteString("--- a/" + p + "\n+++ b/" + p + "\n")
	oldLines := splitAfterLines(old)
	starts := make([]int, len(oldLines))
	off := 0
	for i, l := range oldLines {
		starts[i] = off
		off += len(l)
	}
	lineAt := func(offset int) int { return sort.SearchInts(starts, offset) }

	var changes []change
	for _, r := range regions {
		la := lineAt(r.oldStart)
		if r.oldStart == len(old) {
			la = len(oldLines)
		}
		before := old[r.oldStart:r.oldEnd]
		after := new[r.newStart:r.newEnd]
		oldR, newR := splitAfterLines(before), splitAfterLines(after)
		if len(oldR)+len(newR) > myersMaxLines {
			changes = appendChange(changes, change{at: la, del: len(oldR), ins: newR})
			continue
		}
		for _, e := range myers.ComputeEdits(span.URIFromPath(""), before, after) {
			at := la + e.Span.Start().Line() - 1
			del := la + e.Span.End().Line() - 1 - at
			changes = appendChange(changes, change{at: at, del: del, ins: splitAfterLines(e.NewText)})
		}
	}

	shift := 0 // new line index minus old line index before the current group
	for i := 0; i < len(changes); {
		j := i
		for j+1 < len(changes) && changes[j+1].at-(changes[j].at+changes[j].del) <= 2*diffContext {
			j++
		}
		oldFrom := max(0, changes[i].at-diffContext)
		oldTo := min(len(oldLines), changes[j].at+changes[j].del+diffContext)
		growth := 0
		for k := i; k <= j; k++ {
			growth += len(changes[k].ins) - changes[k].del
		}
		var h strings.Builder
		h.WriteString("@@ -")
		writeRange(&h, oldFrom, oldTo-oldFrom)
		h.WriteString(" +")
		writeRange(&h, oldFrom+shift, oldTo-oldFrom+growth)
		h.WriteString(" @@\n")
		pos := oldFrom
		for k := i; k <= j; k++ {
			c := changes[k]
			writeLines(&h, ' ', oldLines[pos:c.at])
			writeLines(&h, '-', oldLines[c.at:c.at+c.del])
			writeLines(&h, '+', c.ins)
			pos = c.at + c.del
		}
		writeLines(&h, ' ', oldLines[pos:oldTo])
		if b.Len()+h.Len() > maxDiffBytes {
			b.WriteString("\n[diff truncated]\n")
			break
		}
		b.WriteString(h.String())
		shift += growth
		i = j + 1
	}
	return b.String()
}

// appendChange adds c, merging it into the previous change when they touch.
func appendChange(changes []change, c change) []change {
	if c.del == 0 && len(c.ins) == 0 {
		return changes
	}
	if n := len(changes); n > 0 && changes[n-1].at+changes[n-1].del == c.at {
		p := &changes[n-1]
		p.del += c.del
		p.ins = append(p.ins, c.ins...)
		return changes
	}
	return append(changes, c)
}

// writeRange writes a hunk range in GNU form: "s,n"; "s" alone for one line;
// for an empty range the line before it and ",0".
func writeRange(b *strings.Builder, start0, count int) {
	switch count {
	case 0:
		b.WriteString(strconv.Itoa(start0) + ",0")
	case 1:
		b.WriteString(strconv.Itoa(start0 + 1))
	default:
		b.WriteString(strconv.Itoa(start0+1) + "," + strconv.Itoa(count))
	}
}

func writeLines(b *strings.Builder, prefix byte, lines []string) {
	for _, l := range lines {
		b.WriteByte(prefix)
		b.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
}
