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
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"buzzbox/internal/proc"
	"buzzbox/shimtools/ignore"
	"buzzbox/shimtools/passthru"
	"buzzbox/shimtools/printer"
	"buzzbox/shimtools/rustregex"
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

func run(ctx context.Context, o *options, env proc.Env, out *bufio.Writer) int {
	errOut := env.Err()
	if o.help {
		out.WriteString(helpText())
		return 0
	}
	if o.version {
		out.WriteString("ripgrep 13.0.0 (compatible; built into buzzbox)\n")
		return 0
	}
	if o.typeList {
		out.WriteString(ignore.TypeList())
		return 0
	}
	tty := isTerminal(env.Stdout)

	// Unrestricted levels.
	if o.unrestricted >= 1 {
		o.noIgnore = true
	}
	if o.unrestricted >= 2 {
		o.hidden = true
	}
	if o.unrestricted >= 3 {
		o.binary = true
	}

	var overrides ignore.Overrides
	for _, g := range o.globs {
		if err := overrides.Add(g.glob, g.caseFold); err != nil {
			fmt.Fprintln(errOut, err) // ripgrep's words, no "rg: "
			return 2
		}
	}
	var types ignore.Types
	for _, t := range o.types {
		if err := types.Select(t.name, t.negate); err != nil {
			// ripgrep words an unknown type without its "rg: " prefix.
			fmt.Fprintf(errOut, "%v\n", err)
			return 2
		}
	}

	useStdin := len(o.paths) == 0 && !o.files && stdinReadable(env.Stdin)
	threads := o.threads
	if threads == 0 {
		threads = min(runtime.GOMAXPROCS(0), maxThreads)
	}
	if o.sortPath {
		threads = 1
	}
	var global *ignore.Matcher
	if !o.noIgnore && !o.noIgnoreVCS {
		global = globalExcludes(env)
	}
	wo := walk.Options{
		Roots:     o.paths,
		Hidden:    o.hidden,
		NoIgnore:  o.noIgnore,
		NoVCS:     o.noIgnoreVCS,
		Follow:    o.follow,
		MaxDepth:  o.maxDepth,
		Sorted:    o.sortPath,
		SortBy:    o.sortBy,
		Reverse:   o.sortReverse,
		Threads:   threads,
		Overrides: &overrides,
		Types:     &types,
		Global:    global,
		Dir:       env.Dir,
	}
	var errored atomic.Bool
	var errMu sync.Mutex
	report := func(msg string) {
		errored.Store(true)
		if o.noMessages {
			return
		}
		errMu.Lock()
		fmt.Fprintln(errOut, msg)
		errMu.Unlock()
	}
	// warn prints an ignore file line that does not parse (--no-messages
	// silences it too); unlike errors, warnings leave the exit status alone.
	warn := func(err error) {
		if o.noIgnoreMessages || o.noMessages {
			return
		}
		errMu.Lock()
		fmt.Fprintln(errOut, err)
		errMu.Unlock()
	}
	if global != nil {
		for _, err := range global.Errors {
			warn(err)
		}
	}
	wo.Warn = warn
	// walkErr prints a walk problem as ripgrep 13 does; its
	// single-threaded walker words I/O errors differently.
	walkErr := func(path string, err error) {
		var le *walk.LoopError
		switch {
		case errors.As(err, &le):
			report("File system loop found: " + path + " " + le.Error())
		case threads == 1:
			report(path + ": IO error for operation on " + walk.Message(path, err))
		default:
			report(walk.Message(path, err))
		}
	}

	if o.files {
		return listFiles(ctx, o, wo, out, walkErr, &errored)
	}

	// ripgrep refuses a pattern that is not UTF-8, naming the first bad
	// byte (and, from a -f file, the line).
	for _, p := range o.patterns {
		if msg := invalidUTF8(p); msg != "" {
			fmt.Fprintln(errOut, msg)
			return 2
		}
	}
	// Patterns from files (-f), after any -e patterns.
	for _, pf := range o.patternFiles {
		pats, err := readPatternFile(pf, env)
		if err != nil {
			fmt.Fprintf(errOut, "rg: %v\n", err)
			return 2
		}
		for i, p := range pats {
			if msg := invalidUTF8(p); msg != "" {
				fmt.Fprintf(errOut, "%s:%d: %s\n", pf, i+1, msg)
				return 2
			}
		}
		o.patterns = append(o.patterns, pats...)
	}
	if len(o.patternFiles) > 0 && len(o.patterns) == 0 {
		return 1 // an empty pattern file matches nothing
	}

	// Build the matcher.
	mo := search.MatcherOptions{Fixed: o.fixed, Word: o.word, Line: o.line}
	switch o.caseMode {
	case caseIgnore:
		mo.IgnoreCase = true
	case caseSmart:
		mo.SmartCase = true
	}
	m, err := search.NewMatcher(o.patterns, mo)
	var perr *rustregex.ParseError
	if errors.As(err, &perr) {
		// ripgrep's own words, without the "rg: " prefix.
		fmt.Fprintf(errOut, "%v\n", err)
		return 2
	}
	if errors.Is(err, rustregex.ErrNewline) {
		fmt.Fprintf(errOut, "%v\n\n%s\n", err, multilineHint)
		return 2
	}
	if err != nil {
		fmt.Fprintf(errOut, "rg: regex parse error: %v\n", err)
		return 2
	}

	var replacer *search.Replacer
	if o.replace != nil {
		if replacer, err = search.NewReplacer(o.patterns, mo, *o.replace); err != nil {
			fmt.Fprintf(errOut, "rg: regex parse error: %v\n", err)
			return 2
		}
	}

	// Output shape.
	before, after := o.context, o.context
	if o.beforeSet {
		before = o.before
	}
	if o.afterSet {
		after = o.after
	}
	po := printer.Options{Matcher: m, Invert: o.invert, Null: o.null, OnlyMatching: o.onlyMatching}
	// ripgrep's precedence: -q, --json, then counts before file lists.
	switch {
	case o.quiet:
		po.Mode = printer.Quiet
	case o.json:
		po.Mode = printer.JSON
	case o.countMatches:
		po.Mode = printer.CountMatches
	case o.count && o.onlyMatching:
		po.Mode = printer.CountMatches
		po.CountOnlyMatching = true
	case o.count:
		po.Mode = printer.Count
	case o.filesWith:
		po.Mode = printer.FilesWith
	case o.filesWithout:
		po.Mode = printer.FilesWithout
	}
	explicitFiles := len(o.paths) > 0 && len(o.paths) <= mmapMaxPaths
	if explicitFiles {
		for _, p := range o.paths {
			fi, err := os.Stat(abs(env.Dir, p))
			if err != nil || !fi.Mode().IsRegular() {
				explicitFiles = false
				break
			}
		}
	}
	withFilename := len(o.paths) > 1 || (len(o.paths) == 1 && isDir(abs(env.Dir, o.paths[0]))) || (len(o.paths) == 0 && !useStdin)
	if o.withFilename != nil {
		withFilename = *o.withFilename
	}
	if o.vimgrep {
		withFilename = o.withFilename == nil || *o.withFilename
	}
	lineNumber := tty || o.vimgrep || o.json || o.column
	if useStdin && len(o.paths) == 0 {
		lineNumber = o.vimgrep || o.json || o.column
	}
	if o.lineNumber != nil {
		lineNumber = *o.lineNumber
	}
	heading := tty && !o.vimgrep
	if o.heading != nil {
		heading = *o.heading && !o.vimgrep
	}
	if !withFilename {
		heading = false
	}
	color := false
	switch o.color {
	case "always", "ansi":
		color = true
	case "auto":
		// termcolor's rule: a TERM other than "dumb", and no NO_COLOR.
		term := env.Getenv("TERM")
		_, noColor := env.LookupEnv("NO_COLOR")
		color = (tty || o.pretty) && term != "" && term != "dumb" && !noColor
	}
	if o.json {
		color, heading = false, false
	}
	po.WithFilename = withFilename
	po.LineNumber = lineNumber
	po.Vimgrep = o.vimgrep
	po.Heading = heading
	po.Color = color
	po.Context = before > 0 || after > 0
	po.Column = o.column || o.vimgrep
	po.ByteOffset = o.byteOffset
	po.Trim = o.trim
	po.MaxColumns = o.maxColumns
	po.MaxColumnsPreview = o.maxColumnsPreview
	po.IncludeZero = o.includeZero
	po.Replace = replacer

	sc := search.Config{
		Invert:      o.invert,
		Before:      before,
		After:       after,
		MaxCount:    o.maxCount,
		LineNumbers: lineNumber || o.json,
	}
	if po.Mode != printer.Standard && po.Mode != printer.JSON {
		sc.Before, sc.After = 0, 0
		po.Context = false
	}
	walkMode := search.BinaryQuit
	if o.binary {
		walkMode = search.BinaryConvert
	}
	explicitMode := search.BinaryConvert
	if explicitFiles {
		explicitMode = search.BinaryConvertWhole
	}
	if o.text {
		walkMode, explicitMode = search.BinaryNone, search.BinaryNone
		if explicitFiles {
			explicitMode = search.BinaryNoneWhole
		}
	}
	pw := &lockedWriter{w: out}
	pr := printer.New(pw, po)

	started := time.Now()
	var matched atomic.Bool
	var quit atomic.Bool
	var searched atomic.Int64
	type worker struct {
		s *search.Searcher
		f *printer.File
	}
	workers := make([]worker, threads)
	for i := range workers {
		workers[i] = worker{s: search.New(m, sc), f: pr.NewFile()}
	}
	searchOne := func(path string, explicit bool, wi int, r io.Reader, size int64) bool {
		searched.Add(1)
		w := &workers[wi]
		f, mode := w.f, walkMode
		if explicit {
			mode = explicitMode
		}
		w.s.Binary = mode
		f.Begin(path, mode)
		if err := w.s.Search(r, size, f); err != nil {
			report(path + ": " + err.Error())
		}
		ok, err := f.Finish(w.s.Searched())
		if err != nil {
			quit.Store(true)
			return false
		}
		if ok {
			matched.Store(true)
			if o.quiet {
				quit.Store(true)
				return false
			}
		}
		return !quit.Load()
	}
	if useStdin {
		workers[0].s.Stdin = true
		searchOne("<stdin>", true, 0, env.In(), -1)
	} else {
		visit := func(e walk.Entry, wi int) bool {
			if quit.Load() {
				return false
			}
			f, size, err := search.Open(abs(env.Dir, e.Path))
			if err != nil {
				report(walk.Message(e.Path, err))
				return true
			}
			cont := searchOne(e.Path, e.Explicit, wi, f, size)
			f.Close()
			return cont
		}
		walk.Walk(ctx, wo, visit, walkErr)
	}
	if o.json && !o.quiet {
		pw.Write(pr.Summary(time.Since(started)))
	}
	if len(o.paths) == 0 && !useStdin && searched.Load() == 0 {
		// Helpful emptiness: with the default path, searching nothing
		// means a filter excluded everything.
		report(noFilesSearched)
	}
	if err := pr.Err(); err != nil && !isBrokenPipe(err) {
		fmt.Fprintf(errOut, "rg: write stdout: %v\n", err)
		return 2
	}
	if matched.Load() && (o.quiet || !errored.Load()) {
		return 0
	}
	if errored.Load() {
		return 2
	}
	return 1
}

// multilineHint is what ripgrep adds to the error for a pattern that
// needs a line terminator.
const multilineHint = "Consider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched."

// noFilesSearched is ripgrep's note when the default path yields no file.
const noFilesSearched = "No files were searched, which means ripgrep probably applied a filter you didn't expect.\nRunning with --debug will show why files are being skipped."

func listFiles(ctx context.Context, o *options, wo walk.Options, out *bufio.Writer, walkErr walk.ErrorFunc, errored *atomic.Bool) int {
	var mu sync.Mutex
	var any atomic.Bool
	term := byte('\n')
	if o.null {
		term = 0
	}
	var werr error
	walk.Walk(ctx, wo, func(e walk.Entry, _ int) bool {
		mu.Lock()
		defer mu.Unlock()
		any.Store(true)
		if o.quiet {
			return false
		}
		out.WriteString(e.Path)
		if err := out.WriteByte(term); err != nil {
			werr = err
			return false
		}
		return true
	}, walkErr)
	_ = werr
	if any.Load() && (o.quiet || !errored.Load()) {
		return 0
	}
	if errored.Load() {
		return 2
	}
	return 1
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
