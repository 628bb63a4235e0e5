// Package printer renders what package search finds in ripgrep 13's
// formats: the standard "path:line:text" lines (with headings, context
// separators, -o, --vimgrep, -0 and colours), counts, file lists and the
// --json message stream.
//
// Each file is rendered into its worker's buffer and written whole, so
// output from parallel workers never interleaves. Nothing here reads files.
package printer

import (
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"buzzbox/shimtools/search"
)

// Mode is what the printer reports.
type Mode uint8

const (
	Standard     Mode = iota // matching lines
	Count                    // -c: matching lines per file
	CountMatches             // --count-matches: matches per file
	FilesWith                // -l
	FilesWithout             // --files-without-match
	JSON                     // --json
	Quiet                    // -q: nothing
)

// Options configure a printer. The zero value prints bare matching lines.
type Options struct {
	Mode         Mode
	WithFilename bool // prefix lines with the path
	LineNumber   bool // prefix lines with the line number
	OnlyMatching bool // -o
	// CountOnlyMatching is -c with -o, counted as --count-matches except
	// that with -v the inverted lines hold no matches: ripgrep prints 0.
	CountOnlyMatching bool
	Vimgrep           bool // --vimgrep: path:line:column:text per match
	Column            bool // --column: column of the first match (or of each with -o)
	Heading           bool // path on its own line above its matches
	Null              bool // -0: NUL after paths
	Color             bool // ANSI colours as ripgrep's defaults
	Context           bool // -A/-B/-C in effect: "--" between groups
	ByteOffset        bool // -b: byte offset of the line (or match with -o)
	Trim              bool // --trim: drop leading whitespace of printed lines
	IncludeZero       bool // --include-zero: -c prints zero counts too
	// MaxColumns omits (or, with MaxColumnsPreview, cuts) lines longer
	// than this many bytes, terminator included; 0 means no limit.
	MaxColumns        int
	MaxColumnsPreview bool
	Invert            bool // -v (changes what -o prints)
	// Replace, when not nil, rewrites each match in printed lines with
	// --replace's template (not in --json, as in ripgrep).
	Replace *search.Replacer
	// Matcher finds matches within a line, for -o, colours and counts.
	Matcher *search.Matcher
}

// Printer writes whole files' output to one writer. It is safe for
// concurrent use by the files it creates.
type Printer struct {
	o   Options
	mu  sync.Mutex
	out io.Writer
	// wrote says whether any file's output has been written yet, which
	// decides the separator or blank line before the next one.
	wrote bool
	err   error
	stats Stats
	// elapsed sums the per-file search times (--json).
	elapsed time.Duration
}

// Stats totals a run, for --json's summary.
type Stats struct {
	Searches          int64
	SearchesWithMatch int64
	BytesSearched     int64
	BytesPrinted      int64
	MatchedLines      int64
	Matches           int64
}

// New returns a printer writing to out.
func New(out io.Writer, o Options) *Printer { return &Printer{o: o, out: out} }

// Err returns the first write error (a closed pipe, say).
func (p *Printer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stats returns the totals so far.
func (p *Printer) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// WriteRaw writes b (for --files output and messages) as one unit.
func (p *Printer) WriteRaw(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	_, p.err = p.out.Write(b)
	return p.err
}

// commit writes one file's rendered output.
func (p *Printer) commit(f *File) error {
	if !f.streaming {
		p.mu.Lock()
	}
	f.streaming = false
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if p.o.Mode == JSON && f.hits == 0 {
		return nil
	}
	p.stats.Searches++
	p.stats.BytesSearched += f.searched
	p.stats.MatchedLines += f.hits
	p.stats.Matches += f.matches
	if f.hits > 0 {
		p.stats.SearchesWithMatch++
	}
	if len(f.buf) == 0 {
		return nil
	}
	if p.o.Mode == JSON {
		p.stats.BytesPrinted += f.json.printed
	} else {
		p.stats.BytesPrinted += int64(len(f.buf))
	}
	if !f.started {
		p.separate(f)
	}
	if p.err == nil {
		_, p.err = p.out.Write(f.buf)
	}
	p.wrote = true
	return p.err
}

// separate writes what goes between two files' output; p.mu is held.
func (p *Printer) separate(f *File) {
	f.started = true
	if p.wrote && p.o.Mode == Standard {
		switch {
		case p.o.Heading:
			_, p.err = p.out.Write([]byte{'\n'})
		case p.o.Context && f.grouped:
			_, p.err = p.out.Write([]byte("--\n"))
		}
	}
}

// spill bounds a file's buffered output: past streamThreshold the file
// takes the output for itself (other workers wait to commit) and writes
// as it goes, so one huge result does not have to fit in memory. It
// reports false when writing failed.
func (f *File) spill() bool {
	p := f.p
	if p.o.Mode != Standard || (!f.streaming && len(f.buf) < streamThreshold) || (f.streaming && len(f.buf) < streamChunk) {
		return true
	}
	if !f.streaming {
		p.mu.Lock()
		f.streaming = true
		if p.err == nil {
			p.separate(f)
		}
	}
	if p.err == nil {
		_, p.err = p.out.Write(f.buf)
	}
	p.wrote = true
	f.buf = f.buf[:0]
	return p.err == nil
}

const (
	colorPath  = "\x1b[0m\x1b[35m"
	colorLine  = "\x1b[0m\x1b[32m"
	colorCol   = "\x1b[0m"
	colorMatch = "\x1b[0m\x1b[1m\x1b[31m"
	colorReset = "\x1b[0m"
)

// File renders one file's results. A worker reuses one File for all its
// files; it is not safe for concurrent use.
type File struct {
	p        *Printer
	path     string
	buf      []byte
	hits     int64 // matching (or, with -v, non-matching) lines
	matches  int64
	binary   int64 // offset of the first NUL, -1 none
	grouped  bool  // a context group was written
	done     bool  // stop asked (first match for -l/-q)
	searched int64
	mode     search.BinaryMode
	// streaming is set while the file holds the printer's lock and writes
	// directly (see spill); started once its separator is written.
	streaming, started bool
	// headed is set once the --heading path line is written.
	headed bool
	json   jsonState
	// spans, repl, origMatches and context are the line being printed:
	// its matches, its text rewritten by --replace, how many matches
	// the line itself had, and whether it is a context line.
	spans       []span
	repl        []byte
	origMatches int
	context     bool
}

// NewFile returns a reusable File for p.
func (p *Printer) NewFile() *File { return &File{p: p} }

// Begin starts a file searched with binary mode mode, which picks the
// message printed for a binary file with matches.
func (f *File) Begin(path string, mode search.BinaryMode) {
	f.mode = mode
	f.path, f.buf, f.hits, f.matches, f.binary = path, f.buf[:0], 0, 0, -1
	f.grouped, f.done, f.searched = false, false, 0
	f.streaming, f.started, f.headed = false, false, false
	if f.p.o.Mode == JSON {
		f.jsonBegin()
	}
}

// Hits returns the number of matching lines so far.
func (f *File) Hits() int64 { return f.hits }

// Finish writes the file's output. searched is the bytes read. It reports
// whether the file counts as a match for the exit status.
func (f *File) Finish(searched int64) (matched bool, err error) {
	f.searched = searched
	o := &f.p.o
	quitBinary := f.binary >= 0 && f.mode == search.BinaryQuit
	switch o.Mode {
	case Standard:
		if f.binary >= 0 && f.hits > 0 {
			f.binaryMessage()
		}
	case Count, CountMatches:
		n := f.hits
		if o.Mode == CountMatches {
			n = f.matches
		}
		// A file with matching lines is listed even when none of its
		// matches counts (an empty match at the end of a last line).
		if (f.hits > 0 || o.IncludeZero) && !quitBinary {
			if o.WithFilename {
				f.pathPrefix(':')
			}
			f.buf = strconv.AppendInt(f.buf, n, 10)
			f.buf = append(f.buf, '\n')
		}
	case FilesWith:
		if f.hits > 0 && !quitBinary {
			f.pathLine()
		}
	case FilesWithout:
		if f.hits == 0 && !quitBinary {
			f.pathLine()
		}
	case JSON:
		f.jsonEnd()
	}
	matched = f.hits > 0
	if quitBinary && o.Mode != Standard && o.Mode != JSON {
		matched = false
	}
	if o.Mode == FilesWithout {
		// ripgrep squashes the match count of a file it quit for binary
		// data to zero: not listed, yet it counts as a file without one.
		matched = f.hits == 0 || quitBinary
	}
	if o.Mode == Quiet {
		return matched, nil
	}
	return matched, f.p.commit(f)
}

func (f *File) binaryMessage() {
	if f.p.o.WithFilename {
		f.appendPath()
		f.buf = append(f.buf, ": "...)
	}
	if f.mode == search.BinaryQuit {
		f.buf = append(f.buf, "WARNING: stopped searching binary file after match (found \"\\0\" byte around offset "...)
	} else {
		f.buf = append(f.buf, "binary file matches (found \"\\0\" byte around offset "...)
	}
	f.buf = strconv.AppendInt(f.buf, f.binary, 10)
	f.buf = append(f.buf, ")\n"...)
}

func (f *File) appendPath() {
	if f.p.o.Color {
		f.buf = append(f.buf, colorPath...)
		f.buf = append(f.buf, f.path...)
		f.buf = append(f.buf, colorReset...)
		return
	}
	f.buf = append(f.buf, f.path...)
}

// pathPrefix writes the path and its separator (NUL with -0).
func (f *File) pathPrefix(sep byte) {
	f.appendPath()
	if f.p.o.Null {
		f.buf = append(f.buf, 0)
	} else {
		f.buf = append(f.buf, sep)
	}
}

func (f *File) pathLine() {
	f.appendPath()
	if f.p.o.Null {
		f.buf = append(f.buf, 0)
	} else {
		f.buf = append(f.buf, '\n')
	}
}

// Binary implements search.Sink.
func (f *File) Binary(offset int64) bool {
	if f.binary < 0 {
		f.binary = offset
	}
	if f.p.o.Mode == JSON {
		return true
	}
	return true
}

// Break implements search.Sink. ripgrep prints the separator even after
// binary data has ended the output of a converted file: the next line it
// is handed stops the search, but the separator before it is already out.
func (f *File) Break() bool {
	if f.p.o.Mode == Standard {
		f.buf = append(f.buf, "--\n"...)
	}
	return true
}

// suppressed reports whether lines are no longer printed because binary
// data was found in a file searched with conversion; the first line handed
// over after that stops the search.
func (f *File) suppressed() bool {
	return f.binary >= 0 && f.mode != search.BinaryQuit
}

// Match implements search.Sink.
func (f *File) Match(l search.Line) bool {
	o := &f.p.o
	f.hits++
	switch o.Mode {
	case Quiet, FilesWith:
		f.countMatches(l)
		return false
	case FilesWithout:
		return false
	case Count:
		return true
	case CountMatches:
		f.countMatches(l)
		return true
	case JSON:
		f.jsonLine(l, true)
		return true
	}
	if f.suppressed() {
		return false
	}
	f.grouped = true
	f.line(l, false)
	return f.spill()
}

func (f *File) countMatches(l search.Line) {
	if f.p.o.Invert {
		if !f.p.o.CountOnlyMatching {
			f.matches++
		}
		return
	}
	f.each(l, l.BufStart, func(s, e int) bool {
		f.matches++
		return true
	})
}

// Context implements search.Sink.
func (f *File) Context(l search.Line, after bool) bool {
	o := &f.p.o
	if o.Mode == JSON {
		f.jsonLine(l, false)
		return true
	}
	if o.Mode != Standard {
		return true
	}
	if f.suppressed() {
		return false
	}
	f.grouped = true
	f.line(l, true)
	return f.spill()
}

// prefix writes "path:line:col:" as configured, sep between fields.
func (f *File) prefix(line uint64, col int, off int64, sep byte) {
	o := &f.p.o
	if o.WithFilename && !o.Heading {
		f.pathPrefix(sep)
	} else if o.Heading && !f.headed {
		f.pathLine()
		f.headed = true
	}
	if o.LineNumber {
		if o.Color {
			f.buf = append(f.buf, colorLine...)
			f.buf = strconv.AppendUint(f.buf, line, 10)
			f.buf = append(f.buf, colorReset...)
		} else {
			f.buf = strconv.AppendUint(f.buf, line, 10)
		}
		f.buf = append(f.buf, sep)
	}
	if col > 0 {
		if o.Color {
			f.buf = append(f.buf, colorCol...)
			f.buf = strconv.AppendInt(f.buf, int64(col), 10)
			f.buf = append(f.buf, colorReset...)
		} else {
			f.buf = strconv.AppendInt(f.buf, int64(col), 10)
		}
		f.buf = append(f.buf, sep)
	}
	if o.ByteOffset {
		f.buf = strconv.AppendInt(f.buf, off, 10)
		f.buf = append(f.buf, sep)
	}
}

// span is one match's bounds within a printed line.
type span struct{ s, e int }

// line prints a matching line, or a context line when context is set, as
// ripgrep's standard printer does. The matches in it are looked for only
// when the output shows them (ripgrep's "match granularity": colours,
// columns, -o, --vimgrep, --replace), and only in the lines that match:
// matching lines, or context lines with -v. With --replace the line
// printed is the line with every match replaced, and its matches are the
// replacements.
func (f *File) line(l search.Line, context bool) {
	o := &f.p.o
	text := trimEOL(l.Bytes)
	// limit is what -M measures: the line with its terminator, or the
	// rewritten line, which has none.
	limit := len(l.Bytes)
	ms := f.spans[:0]
	if context == o.Invert && (o.Color || o.Column || o.OnlyMatching || o.Vimgrep || o.Replace != nil) {
		// ripgrep looks for the matches of a context line in the line
		// alone, which -w tells from the line in its buffer.
		f.each(l, l.BufStart || context, func(s, e int) bool {
			ms = append(ms, span{s, e})
			return true
		})
		if o.Replace != nil {
			f.repl = f.repl[:0]
			last := 0
			groups := o.Replace.Groups(text)
			for i, m := range ms {
				f.repl = append(f.repl, text[last:m.s]...)
				start := len(f.repl)
				f.repl = o.Replace.Expand(f.repl, text, m.s, m.e, groups)
				ms[i] = span{start, len(f.repl)}
				last = m.e
			}
			f.repl = append(f.repl, text[last:]...)
			text, limit = f.repl, len(f.repl)
		}
	}
	f.spans = ms
	f.origMatches = len(ms)
	f.context = context
	sep := byte(':')
	if context {
		sep = '-'
	}
	col := func(m span) int {
		if o.Column {
			return m.s + 1
		}
		return 0
	}
	switch {
	case len(ms) == 0:
		f.prefix(l.Number, 0, l.Offset, sep)
		f.plain(text, limit)
	case o.OnlyMatching:
		for _, m := range ms {
			f.prefix(l.Number, col(m), l.Offset+int64(m.s), sep)
			f.colored(text[m.s:m.e], m.e-m.s, []span{{0, m.e - m.s}})
		}
	case o.Vimgrep:
		for _, m := range ms {
			f.prefix(l.Number, col(m), l.Offset+int64(m.s), sep)
			f.colored(text, limit, []span{m})
		}
	default:
		f.prefix(l.Number, col(ms[0]), l.Offset, sep)
		f.colored(text, limit, ms)
	}
}

// each calls fn with the matches in l as ripgrep reports them: an empty
// match at the very end of a line without a terminator is dropped.
func (f *File) each(l search.Line, bufStart bool, fn func(s, e int) bool) {
	f.p.o.Matcher.Each(trimEOL(l.Bytes), bufStart, func(s, e int) bool {
		if s == e && s == len(l.Bytes) {
			return false
		}
		return fn(s, e)
	})
}

// plain writes text (no terminator) as ripgrep's write_line does: trimmed
// with --trim, or its stand-in when limit is over -M.
func (f *File) plain(text []byte, limit int) {
	if f.tooLong(limit) {
		f.exceeded(text, f.spans)
		return
	}
	f.buf = append(f.buf, text[f.trimmed(text):]...)
	f.buf = append(f.buf, '\n')
}

// colored writes text with the matches ms coloured, as ripgrep's
// write_colored_line does.
func (f *File) colored(text []byte, limit int, ms []span) {
	if !f.p.o.Color {
		f.plain(text, limit)
		return
	}
	if f.tooLong(limit) {
		f.exceeded(text, ms)
		return
	}
	f.highlight(text, len(text), ms)
	f.buf = append(f.buf, '\n')
}

// trimmed returns how many bytes --trim drops from the start of text.
func (f *File) trimmed(text []byte) int {
	skip := 0
	if f.p.o.Trim {
		for skip < len(text) && isASCIISpace(text[skip]) {
			skip++
		}
	}
	return skip
}

// highlight writes text[:end] (trimmed with --trim) with the parts of ms
// inside it coloured; ripgrep colours adjoining matches as one run.
func (f *File) highlight(text []byte, end int, ms []span) {
	o := &f.p.o
	last := f.trimmed(text[:end])
	colored := false
	for _, m := range ms {
		s, e := max(m.s, last), min(m.e, end)
		if s >= end {
			break
		}
		if e <= s {
			continue
		}
		if s > last && colored {
			f.buf = append(f.buf, colorReset...)
			colored = false
		}
		f.buf = append(f.buf, text[last:s]...)
		if o.Color && !colored {
			f.buf = append(f.buf, colorMatch...)
			colored = true
		}
		f.buf = append(f.buf, text[s:e]...)
		last = e
	}
	if colored {
		f.buf = append(f.buf, colorReset...)
	}
	f.buf = append(f.buf, text[last:end]...)
}

// tooLong reports whether -M applies to a line limit bytes long.
func (f *File) tooLong(limit int) bool {
	return f.p.o.MaxColumns > 0 && limit > f.p.o.MaxColumns
}

// exceeded prints ripgrep's stand-in for a line over -M, or with
// --max-columns-preview the line's start and how many of ms it cuts off.
func (f *File) exceeded(text []byte, ms []span) {
	o := &f.p.o
	if o.MaxColumnsPreview {
		cut := 0
		for n := 0; n < o.MaxColumns && cut < len(text); n++ {
			_, size := utf8.DecodeRune(text[cut:])
			cut += size
		}
		f.highlight(text, cut, ms)
		if len(ms) == 0 {
			f.buf = append(f.buf, " [... omitted end of long line]\n"...)
			return
		}
		n := 0
		for _, m := range ms {
			if m.s >= cut {
				n++
			}
		}
		f.buf = append(f.buf, " [... "...)
		f.buf = strconv.AppendInt(f.buf, int64(n), 10)
		if n == 1 {
			f.buf = append(f.buf, " more match]\n"...)
		} else {
			f.buf = append(f.buf, " more matches]\n"...)
		}
		return
	}
	switch {
	case f.origMatches > 0 && !o.OnlyMatching:
		f.buf = append(f.buf, "[Omitted long line with "...)
		f.buf = strconv.AppendInt(f.buf, int64(f.origMatches), 10)
		f.buf = append(f.buf, " matches]\n"...)
	case f.context:
		f.buf = append(f.buf, "[Omitted long context line]\n"...)
	default:
		f.buf = append(f.buf, "[Omitted long matching line]\n"...)
	}
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}
