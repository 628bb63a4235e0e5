package tree

import "strings"

// Pattern results, as GNU tree's patmatch returns them. -P and -I take
// any non-zero result as a match, so a malformed pattern ("a|", "[a")
// matches every name it is tried on; .gitignore lines want patMatched.
const (
	patMismatch = 0
	patMatched  = 1
	patBad      = -1
)

// matcher runs GNU tree 2.1's pattern matcher: bytes, not characters (the
// C locale); '*' and '?' within one path component; "**" across them;
// [...] classes negated only by '^' ("[!a]" holds '!' and 'a'); '\'
// quoting the next byte; '|' between alternatives; a trailing '/' matching
// only directories. Bytes compare as C's signed char, so a class range
// never holds bytes from 0x80 up unless its bounds are such bytes too.
type matcher struct {
	// fold compares ASCII letters regardless of case (--ignore-case).
	fold bool
	// steps counts recursive calls in one match; past maxPatternSteps the
	// match gives up as a mismatch.
	steps int
}

// match reports how name matches pat; isdir says whether name is a
// directory (or a link to one).
func (m *matcher) match(name, pat string, isdir bool) int {
	m.steps = 0
	return m.patmatch(name, pat, isdir)
}

func (m *matcher) lower(c byte) int8 {
	if m.fold && c >= 'A' && c <= 'Z' {
		c += 'a' - 'A'
	}
	return int8(c)
}

// at is s[i], or 0 (C's terminating NUL) past the end.
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// from is s[i:], or "" past the end.
func from(s string, i int) string {
	if i < len(s) {
		return s[i:]
	}
	return ""
}

func (m *matcher) patmatch(buf, pat string, isdir bool) int {
	m.steps++
	if m.steps > maxPatternSteps {
		return patMismatch
	}
	if bar := strings.IndexByte(pat, '|'); bar >= 0 {
		if bar == 0 || bar == len(pat)-1 {
			return patBad
		}
		r := m.patmatch(buf, pat[:bar], isdir)
		if r == patMismatch {
			r = m.patmatch(buf, pat[bar+1:], isdir)
		}
		return r
	}
	match := patMatched
	var pprev byte
	b, p := 0, 0
	for p < len(pat) && match != patMismatch {
		switch pat[p] {
		case '[':
			p++
			n := patMismatch
			if at(pat, p) != '^' {
				n = patMatched
				match = patMismatch
			} else {
				p++
			}
			c := m.lower(at(buf, b))
			for at(pat, p) != ']' {
				if at(pat, p) == '\\' {
					p++
				}
				if at(pat, p) == 0 {
					return patBad
				}
				if at(pat, p+1) == '-' {
					lo := pat[p]
					p += 2
					if at(pat, p) == '\\' {
						p++
					}
					if c >= m.lower(lo) && c <= m.lower(at(pat, p)) {
						match = n
					}
					if at(pat, p) == 0 {
						p--
					}
				} else if c == m.lower(pat[p]) {
					match = n
				}
				p++
			}
			b++
		case '*':
			p++
			if p >= len(pat) {
				if strings.IndexByte(from(buf, b), '/') < 0 {
					return patMatched
				}
				return patMismatch
			}
			match = patMismatch
			if pat[p] == '*' {
				p++
				if p >= len(pat) {
					return patMatched
				}
				for at(buf, b) != 0 {
					if match = m.patmatch(buf[b:], pat[p:], isdir); match != patMismatch {
						break
					}
					// "**" between two '/'s may match a single '/'.
					if pprev == '/' && pat[p] == '/' && p+1 < len(pat) {
						if match = m.patmatch(buf[b:], pat[p+1:], isdir); match != patMismatch {
							return match
						}
					}
					b++
					for at(buf, b) != 0 && buf[b] != '/' {
						b++
					}
				}
			} else {
				for at(buf, b) != 0 {
					match = m.patmatch(buf[b:], pat[p:], isdir)
					b++
					if match != patMismatch || at(buf, b) == '/' {
						break
					}
				}
			}
			if match == patMismatch && (at(buf, b) == 0 || buf[b] == '/') {
				match = m.patmatch(from(buf, b), pat[p:], isdir)
			}
			return match
		case '?':
			if at(buf, b) == 0 {
				return patMismatch
			}
			b++
		case '/':
			if p+1 >= len(pat) && at(buf, b) == 0 {
				if isdir {
					return patMatched
				}
				return patMismatch
			}
			match = patMismatch
			if at(buf, b) == '/' {
				match = patMatched
			}
			b++
		default:
			if pat[p] == '\\' {
				p++
				if p == len(pat) {
					// tree matches the escaped NUL and reads on past the
					// pattern's end, into bytes that never match.
					return patMismatch
				}
			}
			match = patMismatch
			if m.lower(at(buf, b)) == m.lower(at(pat, p)) {
				match = patMatched
			}
			b++
		}
		pprev = at(pat, p)
		p++
		if match < patMatched {
			return match
		}
	}
	if at(buf, b) == 0 {
		return match
	}
	return patMismatch
}
