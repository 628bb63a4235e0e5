// Package rg is the rg identity: ripgrep 13 compatible recursive search.
//
// Synopsis:
//
//	rg [OPTIONS] PATTERN [PATH ...]
//	rg [OPTIONS] -e PATTERN ... [PATH ...]
//	rg [OPTIONS] --files [PATH ...]
//	rg --type-list
//
// Description:
//
// When a real rg is on PATH (after removing every directory whose rg is
// this executable) it is run instead, with the same arguments and stdio,
// and its exit status is returned; BUZZBOX_SHIM_PASSTHROUGH=0 turns that
// off. Otherwise the built-in search runs: Go RE2 patterns, ignore files,
// hidden and binary files handled as ripgrep 13 does, and output that is
// byte-identical to ripgrep 13's when stdout is not a terminal for the
// flags listed by rg --help. Exit status: 0 a match, 1 none, 2 an error.
//
// Options: see flagTable (rg --help prints it). A flag outside the table
// is refused with exit 2 and the nearest supported flag named.
package rg

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"buzzbox/internal/proc"
	"buzzbox/shimtools/passthru"
	"buzzbox/shimtools/printer"
	"buzzbox/shimtools/search"
	"buzzbox/shimtools/walk"
)

// Main is the rg identity's entry point.
func Main(ctx context.Context, args []string, env proc.Env) int {
	if code, ok := passthru.Run(ctx, "rg", args, env); ok {
		return code
	}
	// ripgrep exits 0 when its reader goes away (rg … | head): take EPIPE
	// as an error value instead of dying of SIGPIPE. Set only here, after
	// any pass-through, because an ignored signal is inherited by children.
	ignoreSIGPIPE()
	return Run(ctx, args, env)
}

// Run is the built-in rg, without pass-through.
func Run(ctx context.Context, args []string, env proc.Env) int {
	o, err := parseArgs(args)
	var ce *clapError
	if errors.As(err, &ce) {
		io.WriteString(env.Err(), ce.raw)
		return 2
	}
	if err != nil {
		fmt.Fprintf(env.Err(), "rg: %v\n", err)
		return 2
	}
	out := bufio.NewWriterSize(env.Out(), outBufSize)
	code := run(ctx, o, env, out)
	if err := out.Flush(); err != nil && !isBrokenPipe(err) && code != 2 {
		fmt.Fprintf(env.Err(), "rg: write stdout: %v\n", err)
		return 2
	}
	return code
}

func isBrokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return terminal(f.Fd())
}

// stdinReadable mirrors ripgrep: with no path given, stdin is searched when
// it is a file, a pipe or a socket.
func stdinReadable(r io.Reader) bool {
	if r == nil {
		return false
	}
	f, ok := r.(*os.File)
	if !ok {
		return true
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	m := fi.Mode()
	return m.IsRegular() || m&os.ModeNamedPipe != 0 || m&os.ModeSocket != 0
}

// run plans the search o asks for and carries it out: usage errors all
// come from planning, before a byte is searched.
func run(ctx context.Context, o *options, env proc.Env, out *bufio.Writer) int {
	p, warnings, err := newPlan(o, env)
	r := &reporter{errOut: env.Err(), silent: o.noMessages, silentWarn: o.noIgnoreMessages || o.noMessages}
	for _, w := range warnings {
		r.warn(w)
	}
	if err != nil {
		fmt.Fprintln(env.Err(), err)
		return 2
	}
	switch p.action {
	case actionPrint:
		out.WriteString(p.text)
		return 0
	case actionNoPattern:
		return 1 // an empty pattern file matches nothing
	}
	p.walk.Warn = r.warn
	walkErr := r.walkError(p.threads)
	if p.action == actionFiles {
		return listFiles(ctx, p, out, walkErr, &r.errored)
	}
	return p.search(ctx, env, out, r, walkErr)
}

// reporter prints the problems met while searching to stderr, one at a
// time, and remembers that there were errors.
type reporter struct {
	errOut io.Writer
	// silent (--no-messages) silences errors and warnings, silentWarn
	// (--no-ignore-messages) warnings alone; the exit status stays.
	silent, silentWarn bool
	errored            atomic.Bool
	mu                 sync.Mutex
}

// report prints an error; the search goes on and exits 2 unless -q
// found a match.
func (r *reporter) report(msg string) {
	r.errored.Store(true)
	if r.silent {
		return
	}
	r.mu.Lock()
	fmt.Fprintln(r.errOut, msg)
	r.mu.Unlock()
}

// warn prints an ignore file line that does not parse; unlike errors,
// warnings leave the exit status alone.
func (r *reporter) warn(err error) {
	if r.silentWarn {
		return
	}
	r.mu.Lock()
	fmt.Fprintln(r.errOut, err)
	r.mu.Unlock()
}

// walkError prints a walk problem as ripgrep 13 does; its
// single-threaded walker words I/O errors differently.
func (r *reporter) walkError(threads int) walk.ErrorFunc {
	return func(path string, err error) {
		var le *walk.LoopError
		switch {
		case errors.As(err, &le):
			r.report("File system loop found: " + path + " " + le.Error())
		case threads == 1:
			r.report(path + ": IO error for operation on " + walk.Message(path, err))
		default:
			r.report(walk.Message(path, err))
		}
	}
}

// searchRun is one search in progress: a searcher and a file printer
// per worker, and what has happened so far.
type searchRun struct {
	p             *plan
	r             *reporter
	workers       []worker
	matched, quit atomic.Bool
	searched      atomic.Int64
}

type worker struct {
	s *search.Searcher
	f *printer.File
}

// search carries out an actionSearch plan over stdin or the walk.
func (p *plan) search(ctx context.Context, env proc.Env, out *bufio.Writer, r *reporter, walkErr walk.ErrorFunc) int {
	pw := &lockedWriter{w: out}
	pr := printer.New(pw, p.printer)
	started := time.Now()
	sr := &searchRun{p: p, r: r, workers: make([]worker, p.threads)}
	for i := range sr.workers {
		sr.workers[i] = worker{s: search.New(p.matcher, p.config), f: pr.NewFile()}
	}
	if p.useStdin {
		sr.workers[0].s.Stdin = true
		sr.one("<stdin>", true, 0, env.In(), -1)
	} else {
		walk.Walk(ctx, p.walk, func(e walk.Entry, wi int) bool {
			if sr.quit.Load() {
				return false
			}
			f, size, err := search.Open(abs(env.Dir, e.Path))
			if err != nil {
				r.report(walk.Message(e.Path, err))
				return true
			}
			cont := sr.one(e.Path, e.Explicit, wi, f, size)
			f.Close()
			return cont
		}, walkErr)
	}
	if p.printer.Mode == printer.JSON {
		pw.Write(pr.Summary(time.Since(started)))
	}
	if p.defaultPath && !p.useStdin && sr.searched.Load() == 0 {
		// Helpful emptiness: with the default path, searching nothing
		// means a filter excluded everything.
		r.report(noFilesSearched)
	}
	if err := pr.Err(); err != nil && !isBrokenPipe(err) {
		fmt.Fprintf(env.Err(), "rg: write stdout: %v\n", err)
		return 2
	}
	return exitCode(sr.matched.Load(), p.quiet(), r.errored.Load())
}

// one searches one file (or stdin) with worker wi and says whether the
// search goes on.
func (sr *searchRun) one(path string, explicit bool, wi int, rd io.Reader, size int64) bool {
	sr.searched.Add(1)
	w := &sr.workers[wi]
	f, mode := w.f, sr.p.walkMode
	if explicit {
		mode = sr.p.explicitMode
	}
	w.s.Binary = mode
	f.Begin(path, mode)
	if err := w.s.Search(rd, size, f); err != nil {
		sr.r.report(path + ": " + err.Error())
	}
	ok, err := f.Finish(w.s.Searched())
	if err != nil {
		sr.quit.Store(true)
		return false
	}
	if ok {
		sr.matched.Store(true)
		if sr.p.quiet() {
			sr.quit.Store(true)
			return false
		}
	}
	return !sr.quit.Load()
}

// exitCode is ripgrep's: 0 a match (with errors only under -q), 2 an
// error, 1 nothing found.
func exitCode(matched, quiet, errored bool) int {
	if matched && (quiet || !errored) {
		return 0
	}
	if errored {
		return 2
	}
	return 1
}

// multilineHint is what ripgrep adds to the error for a pattern that
// needs a line terminator.
const multilineHint = "Consider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched."

// noFilesSearched is ripgrep's note when the default path yields no file.
const noFilesSearched = "No files were searched, which means ripgrep probably applied a filter you didn't expect.\nRunning with --debug will show why files are being skipped."

// listFiles prints the files a search would search (--files).
func listFiles(ctx context.Context, p *plan, out *bufio.Writer, walkErr walk.ErrorFunc, errored *atomic.Bool) int {
	var mu sync.Mutex
	var any atomic.Bool
	term := byte('\n')
	if p.printer.Null {
		term = 0
	}
	walk.Walk(ctx, p.walk, func(e walk.Entry, _ int) bool {
		mu.Lock()
		defer mu.Unlock()
		any.Store(true)
		if p.quiet() {
			return false
		}
		out.WriteString(e.Path)
		// A write error is the flush's to report (Run).
		return out.WriteByte(term) == nil
	}, walkErr)
	return exitCode(any.Load(), p.quiet(), errored.Load())
}

// abs resolves p against dir; relative paths stay relative when dir is the
// process's own working directory (cwd), which saves a join per file.
func abs(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" || dir == cwd() {
		return p
	}
	return filepath.Join(dir, p)
}

var cwd = sync.OnceValue(func() string {
	d, _ := os.Getwd()
	return d
})

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// lockedWriter serialises writes from the two printers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// readPatternFile reads -f patterns, one per line ("-" is stdin).
// invalidUTF8 returns ripgrep's message for a pattern that is not UTF-8,
// or "" for one that is.
func invalidUTF8(p string) string {
	if utf8.ValidString(p) {
		return ""
	}
	var b strings.Builder
	offset := -1
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			if offset < 0 {
				offset = i
			}
			fmt.Fprintf(&b, `\x%02X`, p[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\x%02X`, r)
		default:
			b.WriteString(p[i : i+n])
		}
		i += n
	}
	return fmt.Sprintf("found invalid UTF-8 in pattern at byte offset %d: %s (disable Unicode mode and use hex escape sequences to match arbitrary bytes in a pattern, e.g., '(?-u)\\xFF')", offset, b.String())
}

func readPatternFile(name string, env proc.Env) ([]string, error) {
	var r io.Reader
	if name == "-" {
		r = env.In()
	} else {
		f, err := os.Open(abs(env.Dir, name))
		if err != nil {
			return nil, errors.New(walk.Message(name, err))
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPatternFile))
	if err != nil {
		return nil, fmt.Errorf("read pattern file %s: %w", name, err)
	}
	var pats []string
	for _, line := range strings.Split(string(data), "\n") {
		pats = append(pats, strings.TrimSuffix(line, "\r"))
	}
	if n := len(pats); n > 0 && pats[n-1] == "" {
		pats = pats[:n-1]
	}
	return pats, nil
}
