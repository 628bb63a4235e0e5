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
	Vimgrep      bool // --vimgrep: path:line:column:text per match
	Column       bool // --column: column of the first match (or of each with -o)
	Heading      bool // path on its own line above its matches
	Null         bool // -0: NUL after paths
	Color        bool // ANSI colours as ripgrep's defaults
	Context      bool // -A/-B/-C in effect: "--" between groups
	ByteOffset   bool // -b: byte offset of the line (or match with -o)
	Trim         bool // --trim: drop leading whitespace of printed lines
	IncludeZero  bool // --include-zero: -c prints zero counts too
	// MaxColumns omits (or, with MaxColumnsPreview, cuts) lines longer
	// than this many bytes, terminator included; 0 means no limit.
	MaxColumns        int
	MaxColumnsPreview bool
	Invert            bool // -v (changes what -o prints)
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
	json               jsonState
}

// NewFile returns a reusable File for p.
func (p *Printer) NewFile() *File { return &File{p: p} }

// Begin starts a file searched with binary mode mode, which picks the
// message printed for a binary file with matches.
func (f *File) Begin(path string, mode search.BinaryMode) {
	f.mode = mode
	f.path, f.buf, f.hits, f.matches, f.binary = path, f.buf[:0], 0, 0, -1
	f.grouped, f.done, f.searched = false, false, 0
	f.streaming, f.started = false, false
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
		if (n > 0 || o.IncludeZero) && !quitBinary {
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
		matched = f.hits == 0 && !quitBinary
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
	text := trimEOL(l.Bytes)
	switch {
	case o.Vimgrep && !o.Invert:
		o.Matcher.Each(text, l.BufStart, func(s, e int) bool {
			f.matches++
			f.prefix(l.Number, s+1, l.Offset, ':', true)
			f.appendText(text, l.BufStart, true)
			return true
		})
	case o.OnlyMatching && !o.Invert:
		o.Matcher.Each(text, l.BufStart, func(s, e int) bool {
			f.matches++
			col := 0
			if o.Column {
				col = s + 1
			}
			f.prefix(l.Number, col, l.Offset+int64(s), ':', false)
			if o.Color {
				f.buf = append(f.buf, colorMatch...)
				f.buf = append(f.buf, text[s:e]...)
				f.buf = append(f.buf, colorReset...)
			} else {
				f.buf = append(f.buf, text[s:e]...)
			}
			f.buf = append(f.buf, '\n')
			return true
		})
	default:
		col := 0
		if o.Column && !o.Invert {
			col = 1
			o.Matcher.Each(text, l.BufStart, func(s, e int) bool {
				col = s + 1
				return false
			})
		}
		f.prefix(l.Number, col, l.Offset, ':', false)
		if f.tooLong(l) {
			f.omitted(text, l.BufStart, true)
			break
		}
		f.appendText(text, l.BufStart, !o.Invert)
	}
	return f.spill()
}

func (f *File) countMatches(l search.Line) {
	if f.p.o.Invert {
		f.matches++
		return
	}
	f.p.o.Matcher.Each(trimEOL(l.Bytes), l.BufStart, func(s, e int) bool {
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
	f.prefix(l.Number, 0, l.Offset, '-', false)
	if f.tooLong(l) {
		f.omitted(trimEOL(l.Bytes), true, false)
		return true
	}
	// ripgrep looks for the matches of a context line in the line alone,
	// which -w tells from the line in its buffer.
	f.appendText(trimEOL(l.Bytes), true, o.Invert)
	return f.spill()
}

// prefix writes "path:line:col:" as configured, sep between fields.
func (f *File) prefix(line uint64, col int, off int64, sep byte, vim bool) {
	o := &f.p.o
	if o.WithFilename && !o.Heading {
		f.pathPrefix(sep)
	} else if o.Heading && len(f.buf) == 0 {
		f.pathLine()
		if o.Null {
			// rg ends a -0 heading with NUL then the lines follow.
		}
	}
	if o.LineNumber || vim {
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

// appendText writes a line's text and '\n', colouring matches if asked
// (bufStart is the line's search.Line.BufStart).
func (f *File) appendText(text []byte, bufStart, highlight bool) {
	o := &f.p.o
	skip := 0
	if o.Trim {
		for skip < len(text) && isASCIISpace(text[skip]) {
			skip++
		}
	}
	if o.Color && highlight {
		last := skip
		o.Matcher.Each(text, bufStart, func(s, e int) bool {
			s = max(s, skip)
			if e <= s {
				return true
			}
			f.buf = append(f.buf, text[last:s]...)
			f.buf = append(f.buf, colorMatch...)
			f.buf = append(f.buf, text[s:e]...)
			f.buf = append(f.buf, colorReset...)
			last = e
			return true
		})
		f.buf = append(f.buf, text[last:]...)
	} else {
		f.buf = append(f.buf, text[skip:]...)
	}
	f.buf = append(f.buf, '\n')
}

// tooLong reports whether -M applies to l.
func (f *File) tooLong(l search.Line) bool {
	return f.p.o.MaxColumns > 0 && len(l.Bytes) > f.p.o.MaxColumns
}

// omitted prints ripgrep's stand-in for a line over -M.
func (f *File) omitted(text []byte, bufStart, match bool) {
	o := &f.p.o
	if o.MaxColumnsPreview {
		cut := 0
		for n := 0; n < o.MaxColumns && cut < len(text); n++ {
			_, size := utf8.DecodeRune(text[cut:])
			cut += size
		}
		f.buf = append(f.buf, text[:cut]...)
		f.buf = append(f.buf, " [... omitted end of long line]\n"...)
		return
	}
	switch {
	case match && o.Color && !o.Invert:
		n := 0
		o.Matcher.Each(text, bufStart, func(int, int) bool { n++; return true })
		f.buf = append(f.buf, "[Omitted long line with "...)
		f.buf = strconv.AppendInt(f.buf, int64(n), 10)
		f.buf = append(f.buf, " matches]\n"...)
	case match:
		f.buf = append(f.buf, "[Omitted long matching line]\n"...)
	default:
		f.buf = append(f.buf, "[Omitted long context line]\n"...)
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
