package rg

import (
	"errors"
	"os"
	"runtime"

	"buzzbox/internal/proc"
	"buzzbox/shimtools/ignore"
	"buzzbox/shimtools/printer"
	"buzzbox/shimtools/rustregex"
	"buzzbox/shimtools/search"
	"buzzbox/shimtools/walk"
)

// action is what a plan does.
type action uint8

const (
	actionSearch    action = iota // search the files or stdin
	actionPrint                   // print plan.text (--help, --version, --type-list)
	actionFiles                   // list the files a search would search (--files)
	actionNoPattern               // -f files held no pattern: nothing can match
)

// plan is a search decided in full from the parsed flags, as ripgrep's
// HiArgs is: every setting derived, the matcher built and every usage
// error found before a byte is searched. run carries it out.
type plan struct {
	action action
	text   string // what actionPrint prints

	threads  int
	useStdin bool
	// defaultPath says no path was given: the walk starts at the working
	// directory (unless stdin is searched).
	defaultPath bool
	walk        walk.Options

	matcher *search.Matcher
	// printer is the output's mode and shape; for --files only its Mode
	// (quiet or not) and Null apply.
	printer printer.Options
	config  search.Config
	// walkMode is the binary policy of files found by walking, and
	// explicitMode that of files named on the command line and stdin.
	walkMode, explicitMode search.BinaryMode
}

// quiet is -q: print nothing and stop at the first match.
func (p *plan) quiet() bool { return p.printer.Mode == printer.Quiet }

// newPlan derives the plan from o. warnings are the global excludes
// file's lines that do not parse, to be printed (before any error)
// whatever the outcome; err is a *UsageError, printed as it is (ripgrep's
// words, with or without its "rg: ").
func newPlan(o *options, env proc.Env) (p *plan, warnings []error, err error) {
	switch {
	case o.help:
		return &plan{action: actionPrint, text: helpText()}, nil, nil
	case o.version:
		return &plan{action: actionPrint, text: "ripgrep 13.0.0 (compatible; built into buzzbox)\n"}, nil, nil
	case o.typeList:
		return &plan{action: actionPrint, text: ignore.TypeList()}, nil, nil
	}
	applyUnrestricted(o)
	p = &plan{
		useStdin:    len(o.paths) == 0 && !o.files && stdinReadable(env.Stdin),
		defaultPath: len(o.paths) == 0,
		printer:     printer.Options{Mode: printerMode(o), Null: o.null},
	}
	if err := p.planWalk(o, env); err != nil {
		return nil, nil, err
	}
	if p.walk.Global != nil {
		warnings = p.walk.Global.Errors
	}
	if o.files {
		p.action = actionFiles
		return p, warnings, nil
	}
	if err := readPatterns(o, env); err != nil {
		return nil, warnings, err
	}
	if len(o.patternFiles) > 0 && len(o.patterns) == 0 {
		p.action = actionNoPattern
		return p, warnings, nil
	}
	if err := p.planSearch(o, env); err != nil {
		return nil, warnings, err
	}
	return p, warnings, nil
}

// applyUnrestricted turns each -u into the flags it stands for.
func applyUnrestricted(o *options) {
	if o.unrestricted >= 1 {
		o.noIgnore = true
	}
	if o.unrestricted >= 2 {
		o.hidden = true
	}
	if o.unrestricted >= 3 {
		o.binary = true
	}
}

// planWalk decides the threads and the walk: roots, filters, ignore
// rules and order.
func (p *plan) planWalk(o *options, env proc.Env) error {
	overrides := &ignore.Overrides{}
	for _, g := range o.globs {
		if err := overrides.Add(g.glob, g.caseFold); err != nil {
			return &UsageError{msg: err.Error()} // ripgrep's words, no "rg: "
		}
	}
	types := &ignore.Types{}
	for _, t := range o.types {
		if err := types.Select(t.name, t.negate); err != nil {
			// ripgrep words an unknown type without its "rg: " prefix.
			return &UsageError{msg: err.Error()}
		}
	}
	p.threads = o.threads
	if p.threads == 0 {
		p.threads = min(runtime.GOMAXPROCS(0), maxThreads)
	}
	if o.sortPath {
		p.threads = 1
	}
	var global *ignore.Matcher
	if !o.noIgnore && !o.noIgnoreVCS {
		global = globalExcludes(env)
	}
	p.walk = walk.Options{
		Roots:     o.paths,
		Hidden:    o.hidden,
		NoIgnore:  o.noIgnore,
		NoVCS:     o.noIgnoreVCS,
		Follow:    o.follow,
		MaxDepth:  o.maxDepth,
		Sorted:    o.sortPath,
		SortBy:    o.sortBy,
		Reverse:   o.sortReverse,
		Threads:   p.threads,
		Overrides: overrides,
		Types:     types,
		Global:    global,
		Dir:       env.Dir,
	}
	return nil
}

// readPatterns checks the -e patterns and appends those of the -f files
// after them. ripgrep refuses a pattern that is not UTF-8, naming the
// first bad byte (and, from a -f file, the line).
func readPatterns(o *options, env proc.Env) error {
	for _, p := range o.patterns {
		if msg := invalidUTF8(p); msg != "" {
			return &UsageError{msg: msg}
		}
	}
	for _, pf := range o.patternFiles {
		pats, err := readPatternFile(pf, env)
		if err != nil {
			return usagef("rg: %v", err)
		}
		for i, p := range pats {
			if msg := invalidUTF8(p); msg != "" {
				return usagef("%s:%d: %s", pf, i+1, msg)
			}
		}
		o.patterns = append(o.patterns, pats...)
	}
	return nil
}

// planSearch builds the matcher and decides the output and the searcher.
func (p *plan) planSearch(o *options, env proc.Env) error {
	mo := search.MatcherOptions{Fixed: o.fixed, Word: o.word, Line: o.line}
	switch o.caseMode {
	case caseIgnore:
		mo.IgnoreCase = true
	case caseSmart:
		mo.SmartCase = true
	}
	m, err := search.NewMatcher(o.patterns, mo)
	if err != nil {
		return matcherError(err)
	}
	var replacer *search.Replacer
	if o.replace != nil {
		if replacer, err = search.NewReplacer(o.patterns, mo, *o.replace); err != nil {
			return usagef("rg: regex parse error: %v", err)
		}
	}
	p.matcher = m
	p.printer = printerOptions(o, p.useStdin, env)
	p.printer.Matcher = m
	p.printer.Replace = replacer
	p.planContext(o)
	p.planBinary(o, env)
	return nil
}

// matcherError words a pattern the matcher refuses as ripgrep does.
func matcherError(err error) error {
	var perr *rustregex.ParseError
	switch {
	case errors.As(err, &perr):
		return &UsageError{msg: err.Error()} // ripgrep's own words, without "rg: "
	case errors.Is(err, rustregex.ErrNewline):
		return usagef("%v\n\n%s", err, multilineHint)
	}
	return usagef("rg: regex parse error: %v", err)
}

// printerOptions decides the printer's mode and shape, but for its
// matcher and replacer.
func printerOptions(o *options, useStdin bool, env proc.Env) printer.Options {
	tty := isTerminal(env.Stdout)
	po := printer.Options{
		Mode:              printerMode(o),
		Invert:            o.invert,
		Null:              o.null,
		OnlyMatching:      o.onlyMatching,
		CountOnlyMatching: !o.quiet && !o.json && !o.countMatches && o.count && o.onlyMatching,
		WithFilename:      withFilename(o, useStdin, env),
		LineNumber:        lineNumber(o, useStdin, tty),
		Vimgrep:           o.vimgrep,
		Column:            o.column || o.vimgrep,
		ByteOffset:        o.byteOffset,
		Trim:              o.trim,
		MaxColumns:        o.maxColumns,
		MaxColumnsPreview: o.maxColumnsPreview,
		IncludeZero:       o.includeZero,
	}
	po.Heading = tty && !o.vimgrep
	if o.heading != nil {
		po.Heading = *o.heading && !o.vimgrep
	}
	if !po.WithFilename {
		po.Heading = false
	}
	po.Color = useColor(o, tty, env)
	if o.json {
		po.Color, po.Heading = false, false
	}
	return po
}

// printerMode is ripgrep's precedence: -q, --json, then counts before
// file lists.
func printerMode(o *options) printer.Mode {
	switch {
	case o.quiet:
		return printer.Quiet
	case o.json:
		return printer.JSON
	case o.countMatches, o.count && o.onlyMatching:
		return printer.CountMatches
	case o.count:
		return printer.Count
	case o.filesWith:
		return printer.FilesWith
	case o.filesWithout:
		return printer.FilesWithout
	}
	return printer.Standard
}

// withFilename says whether each line names its file: by default when
// more than one file may be searched.
func withFilename(o *options, useStdin bool, env proc.Env) bool {
	with := len(o.paths) > 1 || (len(o.paths) == 1 && isDir(abs(env.Dir, o.paths[0]))) || (len(o.paths) == 0 && !useStdin)
	if o.withFilename != nil {
		with = *o.withFilename
	}
	if o.vimgrep {
		with = o.withFilename == nil || *o.withFilename
	}
	return with
}

// lineNumber says whether lines are numbered: by default on a terminal,
// but not for stdin searched without a path.
func lineNumber(o *options, useStdin, tty bool) bool {
	n := tty || o.vimgrep || o.json || o.column
	if useStdin && len(o.paths) == 0 {
		n = o.vimgrep || o.json || o.column
	}
	if o.lineNumber != nil {
		n = *o.lineNumber
	}
	return n
}

// useColor applies --color; "auto" is termcolor's rule: a terminal (or
// --pretty), a TERM other than "dumb", and no NO_COLOR.
func useColor(o *options, tty bool, env proc.Env) bool {
	switch o.color {
	case "always", "ansi":
		return true
	case "auto":
		term := env.Getenv("TERM")
		_, noColor := env.LookupEnv("NO_COLOR")
		return (tty || o.pretty) && term != "" && term != "dumb" && !noColor
	}
	return false
}

// planContext decides the searcher's context and limits; only the
// standard and JSON printers show context lines.
func (p *plan) planContext(o *options) {
	before, after := o.context, o.context
	if o.beforeSet {
		before = o.before
	}
	if o.afterSet {
		after = o.after
	}
	p.printer.Context = before > 0 || after > 0
	p.config = search.Config{
		Invert:      o.invert,
		Before:      before,
		After:       after,
		MaxCount:    o.maxCount,
		LineNumbers: p.printer.LineNumber || o.json,
	}
	if p.printer.Mode != printer.Standard && p.printer.Mode != printer.JSON {
		p.config.Before, p.config.After = 0, 0
		p.printer.Context = false
	}
}

// planBinary decides the binary policies. Up to mmapMaxPaths regular
// files named on the command line are read whole by ripgrep (its memory
// map), which changes where a NUL is found.
func (p *plan) planBinary(o *options, env proc.Env) {
	explicitFiles := len(o.paths) > 0 && len(o.paths) <= mmapMaxPaths
	if explicitFiles {
		for _, path := range o.paths {
			fi, err := os.Stat(abs(env.Dir, path))
			if err != nil || !fi.Mode().IsRegular() {
				explicitFiles = false
				break
			}
		}
	}
	p.walkMode, p.explicitMode = search.BinaryQuit, search.BinaryConvert
	if o.binary {
		p.walkMode = search.BinaryConvert
	}
	if explicitFiles {
		p.explicitMode = search.BinaryConvertWhole
	}
	if o.text {
		p.walkMode, p.explicitMode = search.BinaryNone, search.BinaryNone
		if explicitFiles {
			p.explicitMode = search.BinaryNoneWhole
		}
	}
}
