package devmcp

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// nearestLineHint looks for the line most like the first line of old_str
// among the first hintScanLines lines of content, for when old_str was not
// found: usually the model misremembered indentation or a word. It returns
// "" when no line is more than hintMinSimilarity similar. Ties go to the
// later line.
func nearestLineHint(content, oldStr string) string {
	first := ""
	if lines := splitLines(oldStr); len(lines) > 0 {
		first = strings.TrimSpace(lines[0])
	}
	if first == "" {
		return ""
	}
	best, bestLine, bestText := 0.0, 0, ""
	for i, l := range splitLines(headLines(content, hintScanLines)) {
		t := strings.TrimSpace(l)
		sim := similarity(t, first)
		if sim > hintMinSimilarity && sim >= best {
			best, bestLine, bestText = sim, i+1, t
		}
	}
	if bestLine == 0 {
		return ""
	}
	return fmt.Sprintf("Hint: nearest match around line %d (similarity %.2f):\n  found:    %s\n  expected: %s",
		bestLine, best, strconv.Quote(bestText), strconv.Quote(first))
}

// headLines returns the prefix of s holding its first n lines.
func headLines(s string, n int) string {
	off := 0
	for range n {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return s
		}
		off += i + 1
	}
	return s[:off]
}

// similarity is the share of a and b that a minimal character diff keeps
// equal: the length in characters of their longest common subsequence
// divided by the byte length of the longer one. Each side is cut to
// hintCompareBytes first (at a character boundary) to bound the work.
func similarity(a, b string) float64 {
	if a == b {
		return 1
	}
	if a == "" || b == "" {
		return 0
	}
	a, b = cutBytes(a, hintCompareBytes), cutBytes(b, hintCompareBytes)
	return float64(lcsRunes([]rune(a), []rune(b))) / float64(max(len(a), len(b)))
}

// cutBytes returns the longest prefix of s of at most n bytes that ends at a
// character boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// lcsRunes returns the length of the longest common subsequence of a and b.
func lcsRunes(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
