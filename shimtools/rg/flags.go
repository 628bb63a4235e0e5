package rg

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"buzzbox/internal/suggest"
)

// options are the parsed command line ("low args"): plain values, no
// matchers or walkers yet.
type options struct {
	patterns          []string
	patternGiven      bool // -e used: every positional is a path
	paths             []string
	fixed             bool
	caseMode          caseMode
	word, line        bool
	invert            bool
	lineNumber        *bool
	withFilename      *bool
	filesWith         bool
	filesWithout      bool
	count             bool
	countMatches      bool
	onlyMatching      bool
	maxCount          int64
	after, before     int
	afterSet          bool
	beforeSet         bool
	context           int
	globs             []globArg
	types             []typeArg
	typeList          bool
	files             bool
	hidden            bool
	noIgnore          bool
	unrestricted      int
	follow            bool
	maxDepth          int
	sortPath          bool
	sortBy            string // "path", "modified", "accessed", "created"
	sortReverse       bool
	vimgrep           bool
	json              bool
	heading           *bool
	color             string
	null              bool
	quiet             bool
	threads           int
	column            bool
	text              bool
	binary            bool
	noMessages        bool
	noIgnoreMessages  bool
	patternFiles      []string
	maxColumns        int
	maxColumnsPreview bool
	trim              bool
	byteOffset        bool
	includeZero       bool
	noIgnoreVCS       bool
	replace           *string // -r: nil when not given ("" is a replacement)
	pretty            bool
	help              bool
	version           bool
}

type caseMode uint8

const (
	caseSensitive caseMode = iota
	caseIgnore
	caseSmart
)

type globArg struct {
	glob     string
	caseFold bool
}

type typeArg struct {
	name   string
	negate bool
}

// flagDef is one entry of the flag table, which feeds the parser, --help
// and the "did you mean" suggestion.
type flagDef struct {
	long  string
	short byte
	value string // name of the value, "" for a switch
	help  string
	set   func(o *options, v string) error
}

func boolPtr(b bool) *bool { return &b }

// parseNum parses a NUM value as ripgrep 13 does (Rust's usize parse,
// which allows a leading '+'), failing with clap's words for flag.
func parseNum(flag, v string) (int64, error) {
	digits := strings.TrimPrefix(v, "+")
	n, err := strconv.ParseUint(digits, 10, 64)
	var why string
	switch {
	case err == nil:
		return int64(min(n, math.MaxInt64)), nil
	case v == "":
		why = "cannot parse integer from empty string"
	case errors.Is(err, strconv.ErrRange):
		why = "number too large to fit in target type"
	default:
		why = "invalid digit found in string"
	}
	if flag == "--threads" {
		// ripgrep parses -j itself and prints the bare reason.
		return 0, &clapError{raw: why + "\n"}
	}
	return 0, &clapError{raw: fmt.Sprintf("error: Invalid value for '%s <NUM>': %s\n\n", flag, why)}
}

// clapUsage is the usage block ripgrep 13's argument parser appends to
// most of its errors, with the blank line ripgrep prints after them.
const clapUsage = `USAGE:
    
    rg [OPTIONS] PATTERN [PATH ...]
    rg [OPTIONS] -e PATTERN ... [PATH ...]
    rg [OPTIONS] -f PATTERNFILE ... [PATH ...]
    rg [OPTIONS] --files [PATH ...]
    rg [OPTIONS] --type-list
    command | rg [OPTIONS] PATTERN
    rg [OPTIONS] --help
    rg [OPTIONS] --version

For more information try --help

`

// clapError is a command-line error in the words and layout of ripgrep
// 13's argument parser; raw is printed as it is, and rg exits 2.
type clapError struct{ raw string }

func (e *clapError) Error() string { return e.raw }

// clapf formats a clap error followed by the usage block.
func clapf(format string, a ...any) error {
	return &clapError{raw: "error: " + fmt.Sprintf(format, a...) + "\n\n" + clapUsage}
}

// badValue is clap's error for a value outside a flag's possible values.
func badValue(v, flag string, values string) error {
	return &clapError{raw: fmt.Sprintf("error: '%s' isn't a valid value for '%s'\n\t[possible values: %s]\n\n\n%s", v, flag, values, clapUsage)}
}

// flagTable returns the supported flags, in --help order.
func flagTable() []flagDef {
	return []flagDef{
		{"regexp", 'e', "PATTERN", "a pattern to search for; repeatable", func(o *options, v string) error {
			o.patterns = append(o.patterns, v)
			o.patternGiven = true
			return nil
		}},
		{"fixed-strings", 'F', "", "treat patterns as literal strings", func(o *options, _ string) error { o.fixed = true; return nil }},
		{"ignore-case", 'i', "", "search case-insensitively", func(o *options, _ string) error { o.caseMode = caseIgnore; return nil }},
		{"smart-case", 'S', "", "ignore case unless the pattern has upper case", func(o *options, _ string) error { o.caseMode = caseSmart; return nil }},
		{"case-sensitive", 's', "", "search case-sensitively (default)", func(o *options, _ string) error { o.caseMode = caseSensitive; return nil }},
		{"word-regexp", 'w', "", "only match whole words", func(o *options, _ string) error { o.word = true; return nil }},
		{"line-regexp", 'x', "", "only match whole lines", func(o *options, _ string) error { o.line = true; return nil }},
		{"invert-match", 'v', "", "print lines that do not match", func(o *options, _ string) error { o.invert = true; return nil }},
		{"line-number", 'n', "", "show line numbers", func(o *options, _ string) error { o.lineNumber = boolPtr(true); return nil }},
		{"no-line-number", 'N', "", "hide line numbers", func(o *options, _ string) error { o.lineNumber = boolPtr(false); return nil }},
		{"with-filename", 'H', "", "show the path of each match", func(o *options, _ string) error { o.withFilename = boolPtr(true); return nil }},
		{"no-filename", 'I', "", "never show paths", func(o *options, _ string) error { o.withFilename = boolPtr(false); return nil }},
		{"files-with-matches", 'l', "", "print only paths with at least one match", func(o *options, _ string) error {
			// -l and --files-without-match override each other (clap).
			o.filesWith, o.filesWithout = true, false
			return nil
		}},
		{"files-without-match", 0, "", "print only paths without a match", func(o *options, _ string) error {
			o.filesWith, o.filesWithout = false, true
			return nil
		}},
		{"count", 'c', "", "print the number of matching lines per file", func(o *options, _ string) error { o.count = true; return nil }},
		{"count-matches", 0, "", "print the number of matches per file", func(o *options, _ string) error { o.countMatches = true; return nil }},
		{"only-matching", 'o', "", "print only the matched parts", func(o *options, _ string) error { o.onlyMatching = true; return nil }},
		{"max-count", 'm', "NUM", "stop after NUM matching lines per file", func(o *options, v string) error {
			n, err := parseNum("--max-count", v)
			o.maxCount = n
			return err
		}},
		{"after-context", 'A', "NUM", "show NUM lines after each match", func(o *options, v string) error {
			// -A and -C override each other, as -B and -C do (clap).
			n, err := parseNum("--after-context", v)
			o.after, o.afterSet, o.context = int(n), true, 0
			return err
		}},
		{"before-context", 'B', "NUM", "show NUM lines before each match", func(o *options, v string) error {
			n, err := parseNum("--before-context", v)
			o.before, o.beforeSet, o.context = int(n), true, 0
			return err
		}},
		{"context", 'C', "NUM", "show NUM lines before and after each match", func(o *options, v string) error {
			n, err := parseNum("--context", v)
			o.context = int(n)
			o.after, o.afterSet, o.before, o.beforeSet = 0, false, 0, false
			return err
		}},
		{"glob", 'g', "GLOB", "include (or with '!' exclude) paths matching GLOB; repeatable", func(o *options, v string) error {
			o.globs = append(o.globs, globArg{glob: v})
			return nil
		}},
		{"iglob", 0, "GLOB", "like --glob, case-insensitive", func(o *options, v string) error {
			o.globs = append(o.globs, globArg{glob: v, caseFold: true})
			return nil
		}},
		{"type", 't', "TYPE", "only search files of TYPE (see --type-list)", func(o *options, v string) error {
			o.types = append(o.types, typeArg{name: v})
			return nil
		}},
		{"type-not", 'T', "TYPE", "do not search files of TYPE", func(o *options, v string) error {
			o.types = append(o.types, typeArg{name: v, negate: true})
			return nil
		}},
		{"type-list", 0, "", "list the known file types", func(o *options, _ string) error { o.typeList = true; return nil }},
		{"files", 0, "", "list the files that would be searched", func(o *options, _ string) error { o.files = true; return nil }},
		{"hidden", '.', "", "search hidden files and directories", func(o *options, _ string) error { o.hidden = true; return nil }},
		{"no-ignore", 0, "", "ignore .gitignore, .ignore, .rgignore and exclude files", func(o *options, _ string) error { o.noIgnore = true; return nil }},
		{"unrestricted", 'u', "", "-u: --no-ignore, -uu: and --hidden, -uuu: and --binary", func(o *options, _ string) error { o.unrestricted++; return nil }},
		{"follow", 'L', "", "follow symbolic links", func(o *options, _ string) error { o.follow = true; return nil }},
		{"max-depth", 0, "NUM", "descend at most NUM directories", func(o *options, v string) error {
			n, err := parseNum("--max-depth", v)
			o.maxDepth = int(n)
			return err
		}},
		{"sort", 0, "SORTBY", "sort results: path, modified, accessed, created or none", func(o *options, v string) error {
			return setSort(o, v, false)
		}},
		{"sortr", 0, "SORTBY", "sort results in reverse: path, modified, accessed, created or none", func(o *options, v string) error {
			return setSort(o, v, true)
		}},
		{"sort-files", 0, "", "same as --sort path", func(o *options, _ string) error { return setSort(o, "path", false) }},
		{"vimgrep", 0, "", "print path:line:column:text for every match", func(o *options, _ string) error { o.vimgrep = true; return nil }},
		{"json", 0, "", "print results as JSON lines", func(o *options, _ string) error { o.json = true; return nil }},
		{"heading", 0, "", "print the path above its matches", func(o *options, _ string) error { o.heading = boolPtr(true); return nil }},
		{"no-heading", 0, "", "print the path on each line", func(o *options, _ string) error { o.heading = boolPtr(false); return nil }},
		{"color", 0, "WHEN", "never, auto, always or ansi", func(o *options, v string) error {
			switch v {
			case "never", "auto", "always", "ansi":
				o.color = v
				return nil
			}
			return badValue(v, "--color <WHEN>", "always, ansi, auto, never")
		}},
		{"column", 0, "", "show column numbers", func(o *options, _ string) error { o.column = true; return nil }},
		{"null", '0', "", "follow paths with a NUL byte", func(o *options, _ string) error { o.null = true; return nil }},
		{"quiet", 'q', "", "print nothing; exit 0 on the first match", func(o *options, _ string) error { o.quiet = true; return nil }},
		{"threads", 'j', "NUM", "number of search threads", func(o *options, v string) error {
			n, err := parseNum("--threads", v)
			o.threads = int(n)
			return err
		}},
		{"text", 'a', "", "search binary files as text", func(o *options, _ string) error { o.text = true; return nil }},
		{"binary", 0, "", "search binary files found while walking", func(o *options, _ string) error { o.binary = true; return nil }},
		{"no-messages", 0, "", "suppress error messages", func(o *options, _ string) error { o.noMessages = true; return nil }},
		{"no-ignore-messages", 0, "", "suppress warnings about ignore file lines that do not parse", func(o *options, _ string) error { o.noIgnoreMessages = true; return nil }},
		{"file", 'f', "PATTERNFILE", "read patterns, one per line, from a file ('-' for stdin); repeatable", func(o *options, v string) error {
			o.patternFiles = append(o.patternFiles, v)
			o.patternGiven = true
			return nil
		}},
		{"max-columns", 'M', "NUM", "omit lines longer than NUM bytes", func(o *options, v string) error {
			n, err := parseNum("--max-columns", v)
			o.maxColumns = int(n)
			return err
		}},
		{"max-columns-preview", 0, "", "with -M, print the start of long lines", func(o *options, _ string) error { o.maxColumnsPreview = true; return nil }},
		{"replace", 'r', "REPLACEMENT_TEXT", "print each match replaced by REPLACEMENT_TEXT ($1, $name: capture groups)", func(o *options, v string) error {
			o.replace = &v
			return nil
		}},
		{"trim", 0, "", "remove leading whitespace from printed lines", func(o *options, _ string) error { o.trim = true; return nil }},
		{"byte-offset", 'b', "", "print the byte offset of each line (or match with -o)", func(o *options, _ string) error { o.byteOffset = true; return nil }},
		{"include-zero", 0, "", "with -c, also print files with zero matches", func(o *options, _ string) error { o.includeZero = true; return nil }},
		{"no-ignore-vcs", 0, "", "ignore .gitignore, .git/info/exclude and global excludes", func(o *options, _ string) error { o.noIgnoreVCS = true; return nil }},
		{"pretty", 'p', "", "--color always --heading --line-number", func(o *options, _ string) error {
			// ripgrep turns "auto" colours on, shown when TERM allows;
			// an explicit --color still decides.
			o.pretty, o.heading, o.lineNumber = true, boolPtr(true), boolPtr(true)
			return nil
		}},
		{"no-config", 0, "", "accepted for compatibility: no config file is ever read", func(o *options, _ string) error { return nil }},
		{"line-buffered", 0, "", "accepted for compatibility (output is flushed per file)", func(o *options, _ string) error { return nil }},
		{"block-buffered", 0, "", "accepted for compatibility", func(o *options, _ string) error { return nil }},
		{"help", 'h', "", "print this help", func(o *options, _ string) error { o.help = true; return nil }},
		{"version", 'V', "", "print the version", func(o *options, _ string) error { o.version = true; return nil }},
	}
}

// UsageError is a command-line mistake; rg exits 2 with its message.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &UsageError{msg: fmt.Sprintf(format, a...)} }

// parseArgs parses args with GNU rules: clustered short flags ("-in"),
// attached values ("-A3", "-epat", "--glob=x"), flags after positionals,
// and "--" ending flags.
func parseArgs(args []string) (*options, error) {
	ap := newArgParser(args)
	for ap.i = 0; ap.i < len(args); ap.i++ {
		a := args[ap.i]
		var err error
		switch {
		case a == "--":
			ap.positional = append(ap.positional, args[ap.i+1:]...)
			ap.i = len(args)
		case strings.HasPrefix(a, "--"):
			err = ap.long(a)
		case len(a) > 1 && a[0] == '-':
			err = ap.shorts(a)
		default:
			ap.positional = append(ap.positional, a)
		}
		if err != nil {
			return nil, err
		}
	}
	o := ap.o
	if err := jsonConflicts(o); err != nil {
		return nil, err
	}
	positional := ap.positional
	if !o.patternGiven && !o.files && !o.typeList && !o.help && !o.version {
		if len(positional) == 0 {
			return nil, usagef("no pattern given; usage: rg [OPTIONS] PATTERN [PATH ...]")
		}
		o.patterns = []string{positional[0]}
		positional = positional[1:]
	}
	o.paths = positional
	return o, nil
}

// argParser is one parseArgs in progress; i is the argument being read.
type argParser struct {
	o          *options
	args       []string
	i          int
	table      []flagDef
	byLong     map[string]*flagDef
	byShort    [256]*flagDef
	positional []string
	// seen holds the switches given so far, for clap's complaint about a
	// repeated one (see shorts).
	seen map[string]bool
}

func newArgParser(args []string) *argParser {
	ap := &argParser{
		o:     &options{maxCount: -1, maxDepth: -1, color: "auto"},
		args:  args,
		table: flagTable(),
		seen:  make(map[string]bool),
	}
	ap.byLong = make(map[string]*flagDef, len(ap.table))
	for i := range ap.table {
		d := &ap.table[i]
		ap.byLong[d.long] = d
		if d.short != 0 {
			ap.byShort[d.short] = d
		}
	}
	return ap
}

// set applies flag d with value v.
func (ap *argParser) set(d *flagDef, v string) error {
	if d.value == "" {
		ap.seen[d.long] = true
	}
	if err := d.set(ap.o, v); err != nil {
		var ce *clapError
		if errors.As(err, &ce) {
			return err
		}
		return &UsageError{msg: err.Error()}
	}
	return nil
}

// next takes the argument after the current one as a flag's value.
func (ap *argParser) next() (string, bool) {
	if ap.i+1 >= len(ap.args) {
		return "", false
	}
	ap.i++
	return ap.args[ap.i], true
}

// long reads a "--name" or "--name=value" argument.
func (ap *argParser) long(a string) error {
	name, val, hasVal := strings.Cut(a[2:], "=")
	d := ap.byLong[name]
	if d == nil {
		return unknownFlag("--"+name, ap.table)
	}
	if d.value == "" {
		if hasVal {
			return usagef("flag --%s takes no value", name)
		}
		return ap.set(d, "")
	}
	if !hasVal {
		var ok bool
		if val, ok = ap.next(); !ok {
			return usagef("flag --%s needs a value (%s)", name, d.value)
		}
	}
	return ap.set(d, val)
}

// shorts reads a cluster of short flags, "-in" or "-A3"; a flag taking
// a value takes the rest of the cluster or else the next argument.
func (ap *argParser) shorts(a string) error {
	for j := 1; j < len(a); j++ {
		d := ap.byShort[a[j]]
		if d == nil {
			return unknownFlag("-"+string(a[j]), ap.table)
		}
		if d.value == "" {
			// clap 2 refuses a switch seen before when it opens a
			// cluster ("-i -in"), though not when it stands alone or
			// later in one ("-i -i", "-i -ni").
			if j == 1 && len(a) > 2 && ap.seen[d.long] && d.long != "unrestricted" {
				return clapf("The argument '--%s' was provided more than once, but cannot be used multiple times", d.long)
			}
			if err := ap.set(d, ""); err != nil {
				return err
			}
			continue
		}
		// clap takes "-m=1" as "-m 1".
		val := strings.TrimPrefix(a[j+1:], "=")
		if val == "" {
			var ok bool
			if val, ok = ap.next(); !ok {
				return usagef("flag -%c needs a value (%s)", a[j], d.value)
			}
		}
		return ap.set(d, val)
	}
	return nil
}

// jsonConflicts reports clap's conflicts of --json, in its order.
func jsonConflicts(o *options) error {
	if !o.json {
		return nil
	}
	for _, c := range []struct {
		set  bool
		name string
	}{{o.count, "--count"}, {o.countMatches, "--count-matches"}, {o.files, "--files"}, {o.filesWith, "--files-with-matches"}, {o.filesWithout, "--files-without-match"}} {
		if c.set {
			return clapf("The argument '%s' cannot be used with '--json'", c.name)
		}
	}
	return nil
}

// unknownFlag builds the one-line error for a flag this rg does not have,
// naming the closest one it does.
func unknownFlag(flag string, table []flagDef) error {
	var cands []string
	for _, d := range table {
		cands = append(cands, "--"+d.long)
		if d.short != 0 {
			cands = append(cands, "-"+string(d.short))
		}
	}
	best := suggest.Nearest(flag, cands, -1)
	return &UsageError{msg: fmt.Sprintf("unsupported flag %s (this built-in rg does not have it); nearest supported flag: %s; see rg --help", flag, best)}
}

// helpText renders --help from the flag table.
func helpText() string {
	var b strings.Builder
	b.WriteString("rg (built into buzzbox; ripgrep 13 compatible)\n\nUSAGE:\n    rg [OPTIONS] PATTERN [PATH ...]\n    rg [OPTIONS] -e PATTERN ... [PATH ...]\n    rg [OPTIONS] --files [PATH ...]\n    rg --type-list\n\nOPTIONS:\n")
	for _, d := range flagTable() {
		left := "    "
		if d.short != 0 {
			left += "-" + string(d.short) + ", "
		} else {
			left += "    "
		}
		left += "--" + d.long
		if d.value != "" {
			left += " " + d.value
		}
		fmt.Fprintf(&b, "%-36s %s\n", left, d.help)
	}
	b.WriteString("\nWhen a real rg is on PATH it is run instead; set BUZZBOX_SHIM_PASSTHROUGH=0 to always use this one.\n")
	return b.String()
}

func setSort(o *options, v string, reverse bool) error {
	switch v {
	case "path", "modified", "accessed", "created":
		o.sortPath, o.sortBy, o.sortReverse = true, v, reverse
	case "none":
		o.sortPath, o.sortBy, o.sortReverse = false, "", false
	default:
		flag := "--sort <SORTBY>"
		if reverse {
			flag = "--sortr <SORTBY>"
		}
		return badValue(v, flag, "accessed, created, modified, none, path")
	}
	return nil
}
