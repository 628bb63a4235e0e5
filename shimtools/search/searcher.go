package search

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"
)

// BinaryMode is how files with NUL bytes are treated.
type BinaryMode uint8

const (
	// BinaryNone searches everything as text.
	BinaryNone BinaryMode = iota
	// BinaryQuit stops at the first read that holds a NUL (files found by
	// walking): lines before that read are searched, the sink is told.
	BinaryQuit
	// BinaryConvert keeps searching, NUL turned into '\n', after telling
	// the sink (files named on the command line, read in fills).
	BinaryConvert
	// BinaryConvertWhole is ripgrep's memory-mapped path for a few named
	// files: the first fill and every reported line are checked for NUL.
	BinaryConvertWhole
	// BinaryNoneWhole searches everything as text, as one buffer (the
	// memory-mapped path with -a).
	BinaryNoneWhole
)

// Config controls one searcher. The zero value reports matching lines with
// no context, no limit, no line numbers and no binary detection.
type Config struct {
	Invert      bool       // -v: report lines that do not match
	Before      int        // -B lines of context
	After       int        // -A lines of context
	MaxCount    int64      // -m; negative means no limit
	LineNumbers bool       // count lines (Line.Number is 0 otherwise)
	Binary      BinaryMode // NUL handling
	// Stdin marks a search of standard input, which ripgrep reads through
	// an 8 KiB buffer: its first read returns at most that much, which
	// moves where the fills end and so where a NUL is noticed.
	Stdin bool
}

// Line is one line handed to a Sink. Bytes is only valid during the call.
type Line struct {
	Bytes  []byte // the line with its '\n' when it has one
	Number uint64 // 1-based line number, 0 when not counted
	Offset int64  // byte offset of the line's start in the file
	// BufStart says the line starts ripgrep's search buffer: the file's
	// first line, or the first of a fill (see Matcher.Each).
	BufStart bool
}

// Sink receives what a search finds. Returning false stops the search.
type Sink interface {
	Match(l Line) bool
	Context(l Line, after bool) bool
	// Break marks a gap between two groups of context.
	Break() bool
	// Binary reports the offset of the first NUL (per the BinaryMode).
	Binary(offset int64) bool
}

// Searcher searches one file at a time; a worker keeps one and reuses its
// buffer. It is not safe for concurrent use.
type Searcher struct {
	Config
	m   *Matcher
	buf []byte
	// fillCap is the size ripgrep's line buffer has grown to. ripgrep
	// reuses one buffer per worker and never shrinks it, so a long line in
	// one file makes the fills of the next files bigger; 0 means 64 KiB.
	fillCap int64

	// per search
	sink      Sink
	base      int64 // file offset of buf[0]
	pos       int   // first byte not yet processed
	lineNo    uint64
	lastEnd   int64 // file offset just past the last reported line; -1 none
	bufStart  int64 // file offset where ripgrep's buffer starts
	afterLeft int
	hits      int64
	stop      bool
	flagged   bool
	searched  int64
}

// New returns a searcher for m.
func New(m *Matcher, c Config) *Searcher { return &Searcher{Config: c, m: m} }

// Searched returns how many bytes the last search read.
func (s *Searcher) Searched() int64 { return s.searched }

// LineTooLongError reports a line longer than MaxLineBytes.
type LineTooLongError struct{ Limit int }

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("line longer than %d bytes", e.Limit)
}

// sim replays ripgrep's fills to find how far it reads before it notices a
// NUL. ripgrep's line buffer starts at 64 KiB; each fill first rolls the
// unconsumed bytes to the front, then reads into the free space until the
// new bytes hold a line terminator, growing the buffer to three times its
// size whenever it is full. Without context everything searched is
// consumed; with context (-A/-B/-C) the last max(A, B)+1 lines, or the
// lines from the last one reported, whichever is less, stay in the buffer
// and make the next fill smaller.
type sim struct {
	cap   int64 // ripgrep's buffer size
	start int64 // file offset of the buffer's first byte (consumed so far)
	term  int64 // end of the complete lines of the last fill
	end   int64 // end of the data read
	nul   int64 // offset of the first NUL, -1 if none yet
	// cut is where searching stopped when the NUL was read: the end of
	// the lines of the fill before.
	cut int64
	// consumed is ripgrep's byte count when the NUL was read.
	consumed int64
	// firstRead, when positive, caps the first read (stdin's buffer).
	firstRead int64
	// filling is set between the roll and the end of a fill that had to
	// wait for more data.
	filling bool
	done    bool
}

// Search reads r (of size bytes, or -1 when unknown) and reports to sink.
func (s *Searcher) Search(r io.Reader, size int64, sink Sink) error {
	s.sink = sink
	s.base, s.pos, s.lineNo, s.lastEnd, s.afterLeft, s.hits = 0, 0, 1, -1, 0, 0
	s.stop, s.flagged, s.searched, s.bufStart = false, false, 0, 0
	if s.MaxCount == 0 {
		return nil
	}
	r, size, peeked, bom, err := decodeBOM(r, size)
	if err != nil {
		return err
	}
	if bom {
		// ripgrep searches a file with a BOM through its decoder, in
		// fills, even when it would have mapped it whole.
		defer func(b BinaryMode) { s.Binary = b }(s.Binary)
		switch s.Binary {
		case BinaryConvertWhole:
			s.Binary = BinaryConvert
		case BinaryNoneWhole:
			s.Binary = BinaryNone
		}
	}
	want := chunkSize
	if size >= 0 && size < wholeFileMax {
		want = int(size) + 1
	}
	if cap(s.buf) < want {
		s.buf = make([]byte, 0, want)
	}
	buf := s.buf[:0]
	defer func() {
		if cap(buf) <= keepBufMax {
			s.buf = buf[:0]
		} else {
			s.buf = nil
		}
	}()
	if s.fillCap == 0 {
		s.fillCap = fillSize
	}
	sm := sim{cap: s.fillCap, nul: -1, cut: -1}
	if s.Stdin {
		// Its first 8 KiB read ends where the short peek and the rest
		// of that buffer would.
		sm.firstRead = stdinBufSize
	} else if peeked > 0 {
		sm.firstRead = int64(peeked)
	}
	defer func() { s.fillCap = sm.cap }()
	// The fills are replayed for where ripgrep notices a NUL and where its
	// buffer starts, except for a file it searches whole.
	useSim := s.Binary == BinaryQuit || s.Binary == BinaryConvert || s.Binary == BinaryNone
	eof := false
	firstChecked := false
	for !s.stop {
		// Read until the buffer is full or the file ends.
		if !eof {
			if len(buf) == cap(buf) {
				nb := make([]byte, len(buf), 2*cap(buf)+chunkSize)
				copy(nb, buf)
				buf = nb
			}
			// One read at a time, so that a pipe's lines are searched as
			// they arrive rather than when a whole buffer has filled.
			n, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			s.searched += int64(n)
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return err
			}
		}
		dataEnd := s.base + int64(len(buf))
		if s.Binary == BinaryConvertWhole && !firstChecked {
			if !eof && len(buf) < fillSize {
				// ripgrep looks at the first 64 KiB of a mapped file
				// before it searches any of it.
				continue
			}
			firstChecked = true
			lim := len(buf)
			if lim > fillSize {
				lim = fillSize
			}
			if i := bytes.IndexByte(buf[:lim], 0); i >= 0 {
				// ripgrep counts a mapped file's bytes only up to a
				// NUL found before the search.
				defer func() { s.searched = min(s.searched, int64(i)) }()
				s.flagged = true
				if !sink.Binary(int64(i)) {
					return nil
				}
			}
		}
		limit := dataEnd // file offset up to which lines are processed
		if useSim {
			// One ripgrep fill at a time, searching what it would have
			// searched before reading the next fill, so that an early stop
			// (-l, -m, -q) happens before a later NUL is seen, as in rg.
			for !sm.done && !s.stop {
				if !s.advance(&sm, buf, dataEnd, eof) {
					break
				}
				s.bufStart = sm.start
				if sm.nul >= 0 && !s.flagged {
					s.flagged = true
					s.process(buf, int(sm.cut-s.base), true)
					if s.Binary == BinaryQuit {
						// ripgrep counts the bytes it consumed before the
						// fill that held the NUL.
						s.searched = sm.consumed
						sink.Binary(sm.nul)
						return nil
					}
					// Convert: later lines are searched after the sink is told.
					if s.stop || !sink.Binary(sm.nul) {
						return nil
					}
				}
				s.process(buf, int(sm.term-s.base), false)
			}
			if s.stop {
				return nil
			}
			if !sm.done {
				limit = sm.term
			}
		} else if !eof {
			i := bytes.LastIndexByte(buf[s.pos:], '\n')
			if i < 0 {
				limit = s.base + int64(s.pos)
			} else {
				limit = s.base + int64(s.pos+i+1)
			}
		}
		s.process(buf, int(limit-s.base), eof && limit == dataEnd)
		if eof && (limit == dataEnd || s.stop) {
			return nil
		}
		if eof && useSim && !sm.done {
			continue
		}
		// Roll: keep the lines before pos that before-context may need,
		// and what ripgrep keeps, which the replay looks at.
		keep := s.historyStart(buf)
		if useSim && !sm.done {
			keep = min(keep, int(sm.start-s.base))
		}
		if keep > 0 {
			n := copy(buf, buf[keep:])
			buf = buf[:n]
			s.base += int64(keep)
			s.pos -= keep
		}
		if len(buf)-s.pos > MaxLineBytes {
			return &LineTooLongError{Limit: MaxLineBytes}
		}
	}
	return nil
}

// advance replays one ripgrep fill over the data read so far. It reports
// false when more data must be read first (or the replay is done). The
// lines of the previous fill must have been searched, since what they
// reported decides what the roll keeps.
func (s *Searcher) advance(sm *sim, buf []byte, dataEnd int64, eof bool) bool {
	if sm.done {
		return false
	}
	if !sm.filling {
		sm.start = s.rollPoint(sm, buf)
		sm.filling = true
	}
	for {
		used := sm.end - sm.start
		if used >= sm.cap {
			sm.cap *= 3 // ripgrep adds twice the current size
		}
		n := sm.cap - used
		if sm.firstRead > 0 {
			n = min(n, sm.firstRead)
		}
		if sm.end+n > dataEnd {
			if !eof {
				return false
			}
			n = dataEnd - sm.end
		}
		if n == 0 {
			sm.term = sm.end
			sm.done, sm.filling = true, false
			return true
		}
		sm.firstRead = 0
		old := sm.end
		fresh := buf[old-s.base : old+n-s.base]
		sm.end += n
		if i := bytes.IndexByte(fresh, 0); i >= 0 && s.Binary != BinaryNone {
			if sm.nul < 0 {
				sm.nul = old + int64(i)
				sm.cut, sm.consumed = sm.term, sm.start
			}
			if s.Binary == BinaryQuit {
				sm.done, sm.filling = true, false
				return true
			}
			for j := range fresh {
				if fresh[j] == 0 {
					fresh[j] = '\n'
				}
			}
		}
		if i := bytes.LastIndexByte(fresh, '\n'); i >= 0 {
			sm.term = old + int64(i) + 1
			sm.filling = false
			return true
		}
	}
}

// rollPoint returns the file offset ripgrep's roll keeps from after the
// search of buf's lines up to sm.term: the end of everything without
// context, else the later of the start of the last max(A, B)+1 lines and
// the end of the last line reported.
func (s *Searcher) rollPoint(sm *sim, buf []byte) int64 {
	ctx := max(s.Before, s.After)
	if ctx == 0 {
		return sm.term
	}
	at := sm.start + int64(preceding(buf[sm.start-s.base:sm.term-s.base], ctx))
	if s.lastEnd > at {
		at = s.lastEnd
	}
	return at
}

// preceding returns the start of the line count lines before the last line
// of b, a terminator at the very end belonging to that last line (ripgrep's
// lines::preceding).
func preceding(b []byte, count int) int {
	pos := len(b)
	if pos == 0 {
		return 0
	}
	if b[pos-1] == '\n' {
		pos--
	}
	for {
		i := bytes.LastIndexByte(b[:pos], '\n')
		if i < 0 {
			return 0
		}
		if count == 0 {
			return i + 1
		}
		if i == 0 {
			return 0
		}
		count--
		pos = i
	}
}

// historyStart returns where the before-context lines kept across a roll
// begin: up to Before lines back from pos.
func (s *Searcher) historyStart(buf []byte) int {
	p := s.pos
	for k := 0; k < s.Before && p > 0; k++ {
		i := bytes.LastIndexByte(buf[:p-1], '\n')
		p = i + 1
	}
	return p
}

// process handles the complete lines in buf[s.pos:end]. final says the data
// ends at end (the last line may lack a terminator).
func (s *Searcher) process(buf []byte, end int, final bool) {
	if end <= s.pos {
		return
	}
	for s.pos < end && !s.stop {
		if s.MaxCount > 0 && s.hits >= s.MaxCount {
			if s.afterLeft <= 0 {
				s.stop = true
				if s.Binary == BinaryConvertWhole || s.Binary == BinaryNoneWhole {
					// ripgrep counts a mapped file's bytes up to where
					// its search stopped.
					s.searched = s.base + int64(s.pos)
				}
				return
			}
			ls, le, next := s.lineAt(buf, s.pos, end)
			if s.m.MatchLine(buf[ls:le]) != s.Invert {
				// ripgrep shows a matching line in the after-context of
				// the last match -m allows as a match, though it counts
				// as context for when to stop.
				s.send(buf, ls, next, 0, true, false)
				s.afterLeft--
				s.advanceLine(next)
				continue
			}
			s.emitContext(buf, ls, le, next, true)
			continue
		}
		if s.afterLeft > 0 || s.Invert {
			ls, le, next := s.lineAt(buf, s.pos, end)
			hit := s.m.MatchLine(buf[ls:le]) != s.Invert
			if hit {
				s.emitHit(buf, ls, next)
			} else if s.afterLeft > 0 {
				s.emitContext(buf, ls, le, next, true)
			} else {
				s.skipTo(buf, next)
			}
			continue
		}
		st, _, ok := s.m.FindLine(buf[s.pos:end])
		if !ok {
			s.skipTo(buf, end)
			return
		}
		ls := s.pos + st
		s.skipTo(buf, ls)
		_, _, next := s.lineAt(buf, ls, end)
		s.emitHit(buf, ls, next)
	}
}

// lineAt returns the line starting at i: its start, its end without the
// terminator and the start of the next line.
func (s *Searcher) lineAt(buf []byte, i, end int) (ls, le, next int) {
	j := bytes.IndexByte(buf[i:end], '\n')
	if j < 0 {
		return i, end, end
	}
	return i, i + j, i + j + 1
}

// skipTo moves pos forward without reporting, counting lines if needed.
func (s *Searcher) skipTo(buf []byte, to int) {
	if to <= s.pos {
		return
	}
	if s.LineNumbers {
		s.lineNo += uint64(bytes.Count(buf[s.pos:to], []byte{'\n'}))
	}
	s.pos = to
}

func (s *Searcher) emitHit(buf []byte, ls, next int) {
	// Before-context: up to Before lines above, none already reported.
	if s.Before > 0 {
		floor := 0
		if s.lastEnd >= s.base {
			floor = int(s.lastEnd - s.base)
		}
		starts := make([]int, 0, s.Before)
		p := ls
		for k := 0; k < s.Before && p > floor; k++ {
			i := bytes.LastIndexByte(buf[:p-1], '\n')
			if i+1 < floor {
				break
			}
			p = i + 1
			starts = append(starts, p)
		}
		for k := len(starts) - 1; k >= 0 && !s.stop; k-- {
			b := starts[k]
			e := ls
			if k > 0 {
				e = starts[k-1]
			}
			s.send(buf, b, e, uint64(k+1), false, true)
		}
	}
	if s.stop {
		return
	}
	s.send(buf, ls, next, 0, true, false)
	s.hits++
	s.afterLeft = s.After
	s.advanceLine(next)
}

func (s *Searcher) emitContext(buf []byte, ls, le, next int, after bool) {
	s.send(buf, ls, next, 0, false, after)
	s.afterLeft--
	s.advanceLine(next)
}

func (s *Searcher) advanceLine(next int) {
	if next > s.pos {
		s.pos = next
		s.lineNo++
	}
}

// send reports buf[b:e] (terminator included). back > 0 means the line is
// that many lines above pos (before-context).
func (s *Searcher) send(buf []byte, b, e int, back uint64, match, after bool) {
	off := s.base + int64(b)
	if s.Before > 0 || s.After > 0 {
		if s.lastEnd >= 0 && off > s.lastEnd {
			if !s.sink.Break() {
				s.stop = true
				return
			}
		}
	}
	l := Line{Bytes: buf[b:e], Offset: off, BufStart: off == s.bufStart}
	if s.LineNumbers {
		l.Number = s.lineNo - back
	}
	if s.Binary == BinaryConvertWhole && !s.flagged {
		if i := bytes.IndexByte(l.Bytes, 0); i >= 0 {
			s.flagged = true
			if !s.sink.Binary(off + int64(i)) {
				s.stop = true
				return
			}
		}
	}
	var ok bool
	if match {
		ok = s.sink.Match(l)
	} else {
		ok = s.sink.Context(l, after)
	}
	s.lastEnd = s.base + int64(e)
	if !ok {
		s.stop = true
	}
}

// bomPeek is how many bytes ripgrep's decoder reads first to look for a
// byte order mark. Without one, its first read hands over just those
// bytes, so a file whose first line is shorter ends its first fill there.
const bomPeek = 3

// decodeBOM does what ripgrep's decoder does before a file is searched
// through its reader (not memory-mapped, which it is only without a BOM):
// a UTF-8 byte order mark is dropped and UTF-16 with one is converted to
// UTF-8. It returns the stream to search, its size (-1 when unknown), how
// many bytes the first read hands over when there is no BOM (0 for none),
// and whether a BOM was found.
func decodeBOM(r io.Reader, size int64) (io.Reader, int64, int, bool, error) {
	var head [bomPeek]byte
	n := 0
	for n < len(head) {
		k, err := r.Read(head[n:])
		n += k
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, 0, false, err
		}
	}
	h := head[:n]
	switch {
	case bytes.HasPrefix(h, []byte("\xef\xbb\xbf")):
		if size >= 0 {
			size -= 3
		}
		return r, size, 0, true, nil
	case bytes.HasPrefix(h, []byte("\xff\xfe")), bytes.HasPrefix(h, []byte("\xfe\xff")):
		rest := io.MultiReader(bytes.NewReader(append([]byte(nil), h[2:]...)), r)
		return &utf16Reader{r: rest, bigEndian: h[0] == 0xfe, lead: -1}, -1, 0, true, nil
	}
	return &prefixReader{head: append([]byte(nil), h...), r: r}, size, n, false, nil
}

// prefixReader reads head, then r. Unlike io.MultiReader it fills the rest
// of a read from r after head, so a file searched whole still arrives in
// one read.
type prefixReader struct {
	head []byte
	r    io.Reader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	n := copy(b, p.head)
	p.head = p.head[n:]
	if n == len(b) {
		return n, nil
	}
	k, err := p.r.Read(b[n:])
	if err == io.EOF && n+k > 0 {
		err = nil
	}
	return n + k, err
}

// utf16ReadSize is how much UTF-16 the converter reads at once.
const utf16ReadSize = 8 << 10 // bytes

// utf16Reader converts UTF-16 to UTF-8 as the WHATWG decoder ripgrep uses
// does: an unpaired surrogate, and an odd byte at the end, become U+FFFD.
type utf16Reader struct {
	r         io.Reader
	bigEndian bool
	in        []byte // undecoded input; at most one byte between reads
	out       []byte // decoded output not yet returned
	lead      int    // a leading surrogate waiting for its pair, -1 none
	eof       bool
}

func (u *utf16Reader) Read(p []byte) (int, error) {
	for len(u.out) == 0 {
		if u.eof {
			return 0, io.EOF
		}
		if cap(u.in) < utf16ReadSize {
			u.in = make([]byte, len(u.in), utf16ReadSize)
		}
		n, err := u.r.Read(u.in[len(u.in):cap(u.in)])
		u.in = u.in[:len(u.in)+n]
		if err == io.EOF {
			u.eof = true
		} else if err != nil {
			return 0, err
		}
		u.decode()
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	return n, nil
}

// decode converts the whole units in u.in, and at the end of the input
// what is left.
func (u *utf16Reader) decode() {
	out := u.out[:0]
	i := 0
	for ; i+1 < len(u.in); i += 2 {
		c := int(u.in[i]) | int(u.in[i+1])<<8
		if u.bigEndian {
			c = int(u.in[i])<<8 | int(u.in[i+1])
		}
		switch {
		case u.lead >= 0 && c >= 0xdc00 && c <= 0xdfff:
			out = utf8.AppendRune(out, rune(0x10000+(u.lead-0xd800)<<10+(c-0xdc00)))
			u.lead = -1
			continue
		case u.lead >= 0:
			out = utf8.AppendRune(out, utf8.RuneError)
			u.lead = -1
		}
		switch {
		case c >= 0xd800 && c <= 0xdbff:
			u.lead = c
		case c >= 0xdc00 && c <= 0xdfff:
			out = utf8.AppendRune(out, utf8.RuneError)
		default:
			out = utf8.AppendRune(out, rune(c))
		}
	}
	n := copy(u.in, u.in[i:])
	u.in = u.in[:n]
	if u.eof && (u.lead >= 0 || len(u.in) > 0) {
		out = utf8.AppendRune(out, utf8.RuneError)
		u.lead, u.in = -1, u.in[:0]
	}
	u.out = out
}
