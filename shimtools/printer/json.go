package printer

import (
	"encoding/base64"
	"strconv"
	"time"
	"unicode/utf8"

	"buzzbox/shimtools/search"
)

// jsonState is one file's --json bookkeeping. Like ripgrep 13, a file
// with no match prints nothing: "begin" is written before the first line.
type jsonState struct {
	started time.Time
	begun   bool
	pending []byte // context lines seen before the first match
	printed int64  // bytes of begin, match and context messages
}

func (f *File) jsonBegin() {
	f.json.started = time.Now()
	f.json.begun = false
	f.json.pending = f.json.pending[:0]
}

func (f *File) jsonLine(l search.Line, match bool) {
	var line []byte
	if match {
		line = append(line, `{"type":"match","data":{"path":`...)
	} else {
		line = append(line, `{"type":"context","data":{"path":`...)
	}
	line = appendData(line, []byte(f.path))
	line = append(line, `,"lines":`...)
	line = appendData(line, l.Bytes)
	line = append(line, `,"line_number":`...)
	if f.p.o.LineNumber {
		line = strconv.AppendUint(line, l.Number, 10)
	} else {
		line = append(line, "null"...)
	}
	line = append(line, `,"absolute_offset":`...)
	line = strconv.AppendInt(line, l.Offset, 10)
	line = append(line, `,"submatches":[`...)
	if !(match && f.p.o.Invert) {
		text := trimEOL(l.Bytes)
		first := true
		f.each(l, l.BufStart || !match, func(s, e int) bool {
			if match {
				f.matches++
			}
			if !first {
				line = append(line, ',')
			}
			first = false
			line = append(line, `{"match":`...)
			line = appendData(line, text[s:e])
			line = append(line, `,"start":`...)
			line = strconv.AppendInt(line, int64(s), 10)
			line = append(line, `,"end":`...)
			line = strconv.AppendInt(line, int64(e), 10)
			line = append(line, '}')
			return true
		})
	}
	line = append(line, "]}}\n"...)
	if !match && !f.json.begun {
		f.json.pending = append(f.json.pending, line...)
		return
	}
	if !f.json.begun {
		f.json.begun = true
		f.buf = append(f.buf, `{"type":"begin","data":{"path":`...)
		f.buf = appendData(f.buf, []byte(f.path))
		f.buf = append(f.buf, "}}\n"...)
		f.buf = append(f.buf, f.json.pending...)
		f.json.pending = f.json.pending[:0]
	}
	f.buf = append(f.buf, line...)
}

func (f *File) jsonEnd() {
	if !f.json.begun {
		f.buf = f.buf[:0]
		return
	}
	el := time.Since(f.json.started)
	printed := int64(len(f.buf))
	f.json.printed = printed
	b := f.buf
	b = append(b, `{"type":"end","data":{"path":`...)
	b = appendData(b, []byte(f.path))
	b = append(b, `,"binary_offset":`...)
	if f.binary >= 0 {
		b = strconv.AppendInt(b, f.binary, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"stats":{"elapsed":`...)
	b = appendElapsed(b, el, false)
	b = append(b, `,"searches":1,"searches_with_match":1,"bytes_searched":`...)
	b = strconv.AppendInt(b, f.searched, 10)
	b = append(b, `,"bytes_printed":`...)
	b = strconv.AppendInt(b, printed, 10)
	b = append(b, `,"matched_lines":`...)
	b = strconv.AppendInt(b, f.hits, 10)
	b = append(b, `,"matches":`...)
	b = strconv.AppendInt(b, f.matches, 10)
	b = append(b, "}}}\n"...)
	f.buf = b
	f.p.mu.Lock()
	f.p.elapsed += el
	f.p.mu.Unlock()
}

// Summary returns the final --json message.
func (p *Printer) Summary(total time.Duration) []byte {
	p.mu.Lock()
	st, el := p.stats, p.elapsed
	p.mu.Unlock()
	b := []byte(`{"data":{"elapsed_total":`)
	b = appendElapsed(b, total, true)
	b = append(b, `,"stats":{"bytes_printed":`...)
	b = strconv.AppendInt(b, st.BytesPrinted, 10)
	b = append(b, `,"bytes_searched":`...)
	b = strconv.AppendInt(b, st.BytesSearched, 10)
	b = append(b, `,"elapsed":`...)
	b = appendElapsed(b, el, true)
	b = append(b, `,"matched_lines":`...)
	b = strconv.AppendInt(b, st.MatchedLines, 10)
	b = append(b, `,"matches":`...)
	b = strconv.AppendInt(b, st.Matches, 10)
	b = append(b, `,"searches":`...)
	b = strconv.AppendInt(b, st.Searches, 10)
	b = append(b, `,"searches_with_match":`...)
	b = strconv.AppendInt(b, st.SearchesWithMatch, 10)
	b = append(b, "}},\"type\":\"summary\"}\n"...)
	return b
}

// appendElapsed writes ripgrep's duration object; sorted puts the keys in
// the alphabetical order of the summary message.
func appendElapsed(b []byte, d time.Duration, sorted bool) []byte {
	secs := int64(d / time.Second)
	nanos := int64(d % time.Second)
	human := strconv.FormatFloat(d.Seconds(), 'f', 6, 64) + "s"
	if sorted {
		b = append(b, `{"human":"`...)
		b = append(b, human...)
		b = append(b, `","nanos":`...)
		b = strconv.AppendInt(b, nanos, 10)
		b = append(b, `,"secs":`...)
		b = strconv.AppendInt(b, secs, 10)
		return append(b, '}')
	}
	b = append(b, `{"secs":`...)
	b = strconv.AppendInt(b, secs, 10)
	b = append(b, `,"nanos":`...)
	b = strconv.AppendInt(b, nanos, 10)
	b = append(b, `,"human":"`...)
	b = append(b, human...)
	return append(b, `"}`...)
}

// appendData writes {"text":"..."} for UTF-8, {"bytes":"base64"} otherwise.
func appendData(b, data []byte) []byte {
	if !utf8.Valid(data) {
		b = append(b, `{"bytes":"`...)
		b = base64.StdEncoding.AppendEncode(b, data)
		return append(b, `"}`...)
	}
	b = append(b, `{"text":`...)
	b = appendString(b, data)
	return append(b, '}')
}

// appendString quotes s as serde_json does: only '"', '\\' and control
// characters are escaped.
func appendString(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range s {
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
