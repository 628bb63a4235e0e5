package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// hunk is one @@ block of a unified diff.
type hunk struct {
	oldStart, oldLen int
	pre, post        []string // lines with their "\n" (none for a last line without one)
}

// parsePatch reads a single-file unified diff. Header lines before the
// first hunk ("diff", "index", "---", "+++") are skipped; a second "--- "
// header means several files, which a memory slug cannot be.
func parsePatch(diff string) ([]hunk, error) {
	lines := strings.SplitAfter(diff, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	files := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "--- ") {
			files++
		}
	}
	if files > 1 {
		return nil, fmt.Errorf("multi-file patch (%d --- headers); a memory slug is one file", files)
	}
	var hunks []hunk
	i := 0
	for i < len(lines) && !strings.HasPrefix(lines[i], "@@ ") {
		i++
	}
	for i < len(lines) {
		h, oldLeft, newLeft, err := parseHunkHeader(lines[i])
		if err != nil {
			return nil, err
		}
		i++
		for oldLeft > 0 || newLeft > 0 {
			if i >= len(lines) {
				return nil, fmt.Errorf("hunk at line %d ends early", h.oldStart)
			}
			l := lines[i]
			i++
			if l == "\n" { // a blank context line whose leading space was trimmed
				l = " \n"
			}
			body := l[1:]
			switch l[0] {
			case ' ':
				h.pre, h.post = append(h.pre, body), append(h.post, body)
				oldLeft--
				newLeft--
			case '-':
				h.pre = append(h.pre, body)
				oldLeft--
			case '+':
				h.post = append(h.post, body)
				newLeft--
			case '\\':
				continue
			default:
				return nil, fmt.Errorf("unexpected line %q inside a hunk", strings.TrimRight(l, "\n"))
			}
			if oldLeft < 0 || newLeft < 0 {
				return nil, fmt.Errorf("hunk at line %d has more lines than its header says", h.oldStart)
			}
			// "\ No newline at end of file" takes the newline off the line above.
			if i < len(lines) && strings.HasPrefix(lines[i], "\\") {
				noEOL := func(s []string) {
					if n := len(s); n > 0 {
						s[n-1] = strings.TrimSuffix(s[n-1], "\n")
					}
				}
				switch l[0] {
				case ' ':
					noEOL(h.pre)
					noEOL(h.post)
				case '-':
					noEOL(h.pre)
				case '+':
					noEOL(h.post)
				}
				i++
			}
		}
		hunks = append(hunks, h)
		for i < len(lines) && !strings.HasPrefix(lines[i], "@@ ") {
			if strings.TrimSpace(lines[i]) != "" && !strings.HasPrefix(lines[i], "\\") {
				return nil, fmt.Errorf("unexpected line %q between hunks", strings.TrimRight(lines[i], "\n"))
			}
			i++
		}
	}
	if len(hunks) == 0 {
		return nil, fmt.Errorf("no @@ hunk found")
	}
	return hunks, nil
}

// parseHunkHeader reads "@@ -a[,b] +c[,d] @@ …".
func parseHunkHeader(l string) (hunk, int, int, error) {
	f := strings.Fields(l)
	if len(f) < 4 || f[0] != "@@" || f[3] != "@@" || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return hunk{}, 0, 0, fmt.Errorf("malformed hunk header %q", strings.TrimSpace(l))
	}
	rng := func(s string) (int, int, error) {
		a, b, found := strings.Cut(s, ",")
		start, err := strconv.Atoi(a)
		n := 1
		if err == nil && found {
			n, err = strconv.Atoi(b)
		}
		if err != nil || start < 0 || n < 0 || n > maxMemBodyBytes || start > maxMemBodyBytes {
			return 0, 0, fmt.Errorf("malformed hunk range %q", s)
		}
		return start, n, nil
	}
	os, on, err := rng(f[1][1:])
	if err != nil {
		return hunk{}, 0, 0, err
	}
	_, nn, err := rng(f[2][1:])
	if err != nil {
		return hunk{}, 0, 0, err
	}
	return hunk{oldStart: os, oldLen: on}, on, nn, nil
}

// applyPatch applies hunks to value strictly: every hunk's old lines must
// sit exactly at the line number its header declares — no offset, no fuzz.
func applyPatch(value string, hunks []hunk) (string, error) {
	old := strings.SplitAfter(value, "\n")
	if old[len(old)-1] == "" {
		old = old[:len(old)-1]
	}
	var out strings.Builder
	pos := 0
	for n, h := range hunks {
		start := h.oldStart - 1
		if len(h.pre) == 0 {
			if h.oldStart != 0 || len(old) != 0 {
				return "", fmt.Errorf("hunk #%d inserts without context at line %d; regenerate it with diff -u", n+1, h.oldStart)
			}
			start = 0
		}
		if start < pos {
			return "", fmt.Errorf("hunk #%d starts at line %d, before the end of the previous hunk", n+1, h.oldStart)
		}
		if start+len(h.pre) > len(old) {
			return "", fmt.Errorf("hunk #%d needs lines %d-%d but the value has %d", n+1, start+1, start+len(h.pre), len(old))
		}
		for k, want := range h.pre {
			if old[start+k] != want {
				return "", fmt.Errorf("hunk #%d: line %d is %q, the patch expects %q", n+1, start+k+1, old[start+k], want)
			}
		}
		for _, l := range old[pos:start] {
			out.WriteString(l)
		}
		for _, l := range h.post {
			out.WriteString(l)
		}
		pos = start + len(h.pre)
		if out.Len() > maxMemBodyBytes {
			return "", fmt.Errorf("patched value passes the %d-byte limit", maxMemBodyBytes)
		}
	}
	for _, l := range old[pos:] {
		out.WriteString(l)
	}
	return out.String(), nil
}
