// Package tree is the tree identity: a directory listing compatible with
// GNU tree 2.1 for the options below, byte for byte under LC_ALL=C.
//
// Synopsis:
//
//	tree [-adfilsFh] [-L level] [-P pattern] [-I pattern] [--prune]
//	     [--noreport] [--dirsfirst] [--gitignore] [--ignore-case]
//	     [--matchdirs] [--charset X] [--] [path ...]
//
// Description:
//
// When a real tree is on PATH (after removing every directory whose tree is
// this executable) it is run instead with the same arguments and stdio;
// BUZZBOX_SHIM_PASSTHROUGH=0 turns that off. The built-in listing sorts
// names in byte order (the C locale), draws ASCII lines unless --charset
// names another table, escapes unprintable bytes as tree does in the C
// locale, and ends with "N directories, M files" (the roots count). It
// always behaves as GNU tree does under LC_ALL=C: a UTF-8 locale does not
// change the lines or the escaping.
//
// Options:
//
//	-a            list hidden entries too
//	-d            list directories only
//	-f            print each entry's full path
//	-i            no indentation lines
//	-l            follow symbolic links to directories
//	-L level      descend at most level directories
//	-P pattern    list only files matching pattern ('*', '?', [...], '|')
//	-I pattern    do not list entries matching pattern
//	--ignore-case match -P, -I and .gitignore patterns ignoring ASCII case
//	--matchdirs   list all entries of a directory whose path matches -P
//	--prune       omit directories left empty by -P/-I
//	--noreport    omit the final count
//	--dirsfirst   list directories before files
//	-F            append '/', '*', '@'-style type marks ('/', '*', '=', '|')
//	-s, -h        print sizes (bytes, or human-readable)
//	--gitignore   honour .gitignore files below each root, as tree reads them
//	--charset X   draw lines in charset X (default $TREE_CHARSET): UTF-8,
//	              tree's Latin, CJK, IBM PC and KOI8 tables, else ASCII
//
// It does not implement tree's HTML, XML or JSON output, colours, dates,
// permissions or sorting options; such flags are refused with exit 2 and
// the supported flag closest in purpose named.
//
// Where it knowingly differs from GNU tree 2.1:
//
//   - an argument GNU tree rejects ("--prun", "--noreport=x") gets the
//     same one-line exit-2 hint, not "Invalid argument" and the usage
//     with exit 1; --help prints this tree's usage;
//   - a UTF-8 locale, LS_COLORS/TREE_COLORS on a terminal and
//     STDDATA_FD (JSON to that descriptor) change nothing here;
//   - a failed write to stdout (a full disk) exits 2 where tree exits 0;
//   - a followed link whose target, joined to its directory's path, is
//     longer than tree's path buffer is listed, where tree overflows the
//     buffer and crashes;
//   - a -P/-I/.gitignore pattern needing more than maxPatternSteps
//     matcher calls for one name does not match it (tree takes time
//     exponential in the pattern's stars).
package tree

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"buzzbox/internal/proc"
	"buzzbox/internal/suggest"
	"buzzbox/shimtools/passthru"
	"buzzbox/shimtools/walk"
)

// Main is the tree identity's entry point.
func Main(ctx context.Context, args []string, env proc.Env) int {
	if code, ok := passthru.Run(ctx, "tree", args, env); ok {
		return code
	}
	return Run(ctx, args, env)
}

type options struct {
	all, dirsOnly, fullPath, noIndent, follow bool
	// level is how deep to descend, -1 for no limit.
	level int
	// include and exclude are the -P and -I patterns, as given.
	include, exclude           []string
	prune, noReport, dirsFirst bool
	classify, size, human      bool
	gitignore, ignoreCase      bool
	matchDirs                  bool
	// charset is --charset's value; hasCharset says it was given.
	charset    string
	hasCharset bool
	paths      []string
}

// flagNames lists every supported flag, for parsing and suggestions.
var flagNames = []string{"-a", "-d", "-f", "-i", "-l", "-L", "-P", "-I", "-F", "-s", "-h",
	"--prune", "--noreport", "--dirsfirst", "--gitignore", "--ignore-case", "--matchdirs", "--charset", "--help"}

// UsageError is a command-line mistake.
type UsageError struct {
	msg  string
	code int
}

func (e *UsageError) Error() string { return e.msg }

func parseArgs(args []string) (*options, error) {
	o := &options{level: -1}
	unsupported := func(arg, name string) error {
		best := gnuNearest(name)
		if best == "" {
			best = suggest.Nearest(name, flagNames, -1)
		}
		return &UsageError{msg: fmt.Sprintf("unsupported flag %s (this built-in tree does not have it); nearest supported flag: %s; see tree --help", arg, best), code: 2}
	}
	next := func(i *int, flag string) (string, error) {
		if *i+1 >= len(args) {
			return "", &UsageError{msg: fmt.Sprintf("Missing argument to %s option.", flag), code: 1}
		}
		*i++
		return args[*i], nil
	}
	// longArg takes the value of a long option as tree's long_arg does:
	// after '=', else the next argument, whatever follows the name.
	longArg := func(i *int, a, prefix string) (string, error) {
		rest := a[len(prefix):]
		if strings.HasPrefix(rest, "=") {
			if rest == "=" {
				return "", &UsageError{msg: fmt.Sprintf("Missing argument to %s=", prefix), code: 1}
			}
			return rest[1:], nil
		}
		if *i+1 >= len(args) {
			return "", &UsageError{msg: fmt.Sprintf("Missing argument to %s", prefix), code: 1}
		}
		*i++
		return args[*i], nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			o.paths = append(o.paths, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			switch a {
			case "--prune":
				o.prune = true
			case "--noreport":
				o.noReport = true
			case "--dirsfirst":
				o.dirsFirst = true
			case "--gitignore":
				o.gitignore = true
			case "--ignore-case":
				o.ignoreCase = true
			case "--matchdirs":
				o.matchDirs = true
			case "--help":
				return nil, &UsageError{msg: "help", code: 0}
			default:
				// tree compares only the start of an option that takes
				// a value, so "--charsetX utf-8" sets the charset.
				if strings.HasPrefix(a, "--charset") {
					val, err := longArg(&i, a, "--charset")
					if err != nil {
						return nil, err
					}
					o.charset, o.hasCharset = val, true
					continue
				}
				name, _, _ := strings.Cut(a, "=")
				return nil, unsupported(a, name)
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				switch a[j] {
				case 'a':
					o.all = true
				case 'd':
					o.dirsOnly = true
				case 'f':
					o.fullPath = true
				case 'i':
					o.noIndent = true
				case 'l':
					o.follow = true
				case 'F':
					o.classify = true
				case 's':
					o.size = true
				case 'h':
					o.human = true
				case 'L':
					v, err := next(&i, "-L")
					if err != nil {
						return nil, err
					}
					n := levelArg(v)
					if n < 0 {
						return nil, &UsageError{msg: "Invalid level, must be greater than 0.", code: 1}
					}
					o.level = int(n) + 1
				case 'P', 'I':
					v, err := next(&i, "-"+string(a[j]))
					if err != nil {
						return nil, err
					}
					if a[j] == 'P' {
						o.include = append(o.include, v)
					} else {
						o.exclude = append(o.exclude, v)
					}
				case '-':
					// "-a-": tree takes a '-' inside a cluster for a flag.
					return nil, unsupported(a, a)
				default:
					f := "-" + string(a[j])
					return nil, unsupported(f, f)
				}
			}
		default:
			o.paths = append(o.paths, a)
		}
	}
	return o, nil
}

// gnuNearest is the supported flag closest in purpose to GNU tree option
// name, which this tree does not have, or "" for none (the nearest
// spelling is named then).
func gnuNearest(name string) string {
	switch name {
	case "-D", "-p", "-u", "-g", "--du", "--inodes", "--device", "--metafirst", "--timefmt":
		return "-s" // the one file detail printed
	case "--si":
		return "-h"
	case "-t", "-c", "-r", "-v", "-U", "--sort", "--filesfirst":
		return "--dirsfirst" // the one ordering option
	case "-C", "-n", "-A", "-S":
		return "--charset"
	case "-x", "-R", "--filelimit":
		return "-L"
	case "--gitfile":
		return "--gitignore"
	case "-J", "-X", "-H", "-T", "-o", "--hintro", "--houtro", "--nolinks", "--hyperlink", "--fromfile", "--fromtabfile", "--fflinks":
		return "-f" // output is the plain listing; -f gives full paths
	}
	return ""
}

// levelArg is tree 2.1's "(int)(strtoul(s, NULL, 0) - 1)": leading
// spaces, a sign, a 0x or 0 prefix for hex or octal, digits up to the
// first that does not fit; ULONG_MAX on overflow; then truncated to int.
func levelArg(s string) int32 {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] >= '\t' && s[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	digit := func(c byte) uint64 {
		switch {
		case c >= '0' && c <= '9':
			return uint64(c - '0')
		case c|0x20 >= 'a' && c|0x20 <= 'z':
			return uint64(c|0x20-'a') + 10
		}
		return 36
	}
	base := uint64(10)
	switch {
	case i+2 < len(s) && s[i] == '0' && s[i+1]|0x20 == 'x' && digit(s[i+2]) < 16:
		base = 16
		i += 2
	case i < len(s) && s[i] == '0':
		base = 8
	}
	var v uint64
	overflow := false
	for ; i < len(s); i++ {
		d := digit(s[i])
		if d >= base {
			break
		}
		if v > (math.MaxUint64-d)/base {
			overflow = true
		}
		v = v*base + d
	}
	switch {
	case overflow:
		v = math.MaxUint64
	case neg:
		v = -v
	}
	return int32(uint32(v - 1))
}

const helpText = `usage: tree [-adfilsFh] [-L level] [-P pattern] [-I pattern] [--prune]
	[--noreport] [--dirsfirst] [--gitignore] [--ignore-case] [--matchdirs]
	[--charset X] [--] [directory ...]
(built into buzzbox; GNU tree 2.1 compatible for these options. When a real
tree is on PATH it is run instead; BUZZBOX_SHIM_PASSTHROUGH=0 keeps this one.)
`

// Run is the built-in tree, without pass-through.
func Run(ctx context.Context, args []string, env proc.Env) int {
	o, err := parseArgs(args)
	if err != nil {
		ue, _ := err.(*UsageError)
		if ue != nil && ue.code == 0 {
			fmt.Fprint(env.Out(), helpText)
			return 0
		}
		fmt.Fprintf(env.Err(), "tree: %v\n", err)
		if ue != nil {
			return ue.code
		}
		return 2
	}
	out := bufio.NewWriterSize(env.Out(), outBufSize)
	if o.dirsOnly {
		// GNU tree 2.1 ignores --prune when listing directories only.
		o.prune = false
	}
	t := &lister{o: o, env: env, w: out, visited: map[fileKey]bool{}, needInfo: o.size || o.human || o.classify,
		m: &matcher{fold: o.ignoreCase}, fullTree: o.prune || o.matchDirs}
	t.cwd, _ = os.Getwd()
	cs := o.charset
	if !o.hasCharset {
		// tree takes $TREE_CHARSET when --charset is not given; in the C
		// locale nothing else picks one.
		cs = env.Getenv("TREE_CHARSET")
	}
	t.lines = linesFor(cs)
	if gd := env.Getenv("GIT_DIR"); o.gitignore && gd != "" {
		// tree reads $GIT_DIR/info/exclude through its own path, so
		// only its name patterns (no '/') can match.
		ex := gd + "/info/exclude"
		if f := readGitFile(t.abs(ex), ex); f != nil {
			t.stack = append(t.stack, f)
		}
	}
	code := t.run(ctx)
	if err := out.Flush(); err != nil && code == 0 {
		return 2
	}
	return code
}

type lister struct {
	o       *options
	env     proc.Env
	w       *bufio.Writer
	dirs    int
	files   int
	visited map[fileKey]bool
	cwd     string
	// needInfo is set when entries need lstat (sizes, -F marks); names and
	// types come from the directory listing alone otherwise.
	needInfo bool
	// m matches -P, -I and .gitignore patterns.
	m *matcher
	// lines is the indentation drawn, per --charset or $TREE_CHARSET.
	lines lineSet
	// errors counts directories below a root that could not be opened
	// (outside fullTree mode, as tree counts them); any makes the exit
	// status 2.
	errors int
	// fullTree is set when tree 2.1 reads the whole tree before printing
	// it (--prune, --matchdirs).
	fullTree bool
	// stack holds the ignore files in force, last pushed last:
	// $GIT_DIR/info/exclude, then .gitignore files of the directories
	// being read.
	stack []*gitFile
}

// node is one listed entry.
type node struct {
	name   string // as read from the directory
	path   string // as printed with -f
	fi     fs.FileInfo
	isDir  bool   // a directory, or a link to one
	link   string // link target, "" for none
	linkFi fs.FileInfo
	// dir is the path the entries' printed paths are built on (tree's
	// "newpath"): path itself, or for a followed link the target,
	// absolute or joined to the link's directory.
	dir string
	// rdir is the path the entries are read through, matched against
	// anchored .gitignore lines and --matchdirs: dir, except that with
	// --prune or --matchdirs tree's first pass always joins with a '/'.
	rdir string
	note string // e.g. "  [recursive, not followed]"
	kids []*node
}

// abs resolves p against the working directory; when that is the
// process's own, p is used as it is, which saves a join per entry. p is
// not cleaned: "link/.." must go through the link, as the kernel does.
func (t *lister) abs(p string) string {
	if filepath.IsAbs(p) || t.env.Dir == "" || t.env.Dir == t.cwd {
		return p
	}
	return t.env.Dir + "/" + p
}

func (t *lister) run(ctx context.Context) int {
	roots := t.o.paths
	if len(roots) == 0 {
		roots = []string{"."}
	}
	code := 0
	for _, root := range roots {
		if ctx.Err() != nil {
			return 2
		}
		if t.o.fullPath {
			// With -f tree drops a root's trailing slashes ("./" is ".").
			for len(root) > 1 && root[len(root)-1] == '/' {
				root = root[:len(root)-1]
			}
		}
		// tree lists a root as lstat(2) sees it (a link's own size, '@'
		// for -F) and reads it through opendir(3), which follows links.
		fi, err := os.Lstat(t.abs(root))
		if err != nil {
			t.w.WriteString(escape(root))
			t.w.WriteString("  [error opening dir]\n")
			code = 2
			continue
		}
		n := &node{name: root, path: root, dir: root, rdir: root, fi: fi}
		if fi.Mode()&fs.ModeSymlink != 0 {
			sfi, err := os.Stat(t.abs(root))
			n.isDir = err == nil && sfi.IsDir()
		} else {
			n.isDir = fi.IsDir()
		}
		if !n.isDir {
			// A file, or a link to none or to a file: tree counts it as a
			// file it could not open as a directory.
			t.files++
			t.printRoot(n)
			t.w.WriteString("  [error opening dir]\n")
			continue
		}
		if t.o.follow {
			// tree notes the root as lstat(2) sees it.
			t.visited[keyOf(fi)] = true
		}
		t.read(n, 1)
		if n.note != "" {
			// A root directory tree cannot open counts as a file.
			t.files++
			t.printRoot(n)
			t.w.WriteString(n.note)
			t.w.WriteByte('\n')
			continue
		}
		if len(n.kids) > 0 {
			// tree 2.1 counts a root directory only when it lists something.
			t.dirs++
		}
		t.printRoot(n)
		t.w.WriteByte('\n')
		t.printKids(n, nil)
	}
	if !t.o.noReport {
		t.w.WriteByte('\n')
		if t.o.dirsOnly {
			fmt.Fprintf(t.w, "%d director%s\n", t.dirs, plural(t.dirs, "y", "ies"))
		} else {
			fmt.Fprintf(t.w, "%d director%s, %d file%s\n", t.dirs, plural(t.dirs, "y", "ies"), t.files, plural(t.files, "", "s"))
		}
	}
	if t.errors > 0 {
		code = 2
	}
	return code
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// read fills n.kids with the entries of directory n at depth (1 for a
// root's children).
func (t *lister) read(n *node, depth int) {
	include := t.o.include
	if t.o.matchDirs && len(include) > 0 {
		// With --matchdirs a directory whose path below the root matches
		// -P has all its entries listed (not those of its subdirectories).
		if rel := belowRoot(n.rdir, depth-1); rel != "" && t.matchAny(include, rel, true) {
			include = nil
		}
	}
	// With --prune or --matchdirs tree returns early from a directory it
	// cannot open or that lists nothing, leaving its .gitignore in force.
	pushed := t.pushGit(n.rdir)
	pop := func() {
		if pushed {
			t.popGit()
		}
	}
	ents, err := walk.ReadDir(t.abs(n.rdir))
	if err != nil && len(ents) == 0 {
		n.note = "  [error opening dir]"
		if !t.fullTree {
			pop()
			if depth > 1 {
				// Only the second pass over a directory below a root
				// counts it as an error for the exit status.
				t.errors++
			}
		}
		return
	}
	probed, stat := false, false
	for _, e := range ents {
		name := e.Name
		if !t.o.all && strings.HasPrefix(name, ".") {
			continue
		}
		p := joinName(n.rdir, name)
		if len(p) >= pathMax {
			// tree's lstat(2) of the entry fails and it skips it.
			continue
		}
		k := &node{name: name, path: joinName(n.dir, name)}
		k.dir, k.rdir = k.path, p
		if t.fullTree {
			// tree's first pass joins a directory's path to its
			// entries' with a '/' even when it already ends in one.
			k.rdir = t.linkDir(n.rdir, name)
		}
		if t.needInfo || stat || e.Type == fs.ModeIrregular || !probed {
			// tree lstat(2)s every entry and leaves out those it cannot;
			// we do when the first one fails (a directory we may read
			// but not search), and otherwise only when we need to.
			fi, err := os.Lstat(t.abs(p))
			if !probed {
				probed, stat = true, err != nil
			}
			if err != nil {
				continue
			}
			k.fi = fi
		}
		if e.Type&fs.ModeSymlink != 0 {
			k.link, _ = os.Readlink(t.abs(p))
			if tfi, err := os.Stat(t.abs(p)); err == nil {
				k.linkFi = tfi
				k.isDir = tfi.IsDir()
			}
			if k.isDir && t.o.follow {
				k.dir = t.linkDir(n.dir, k.link)
				k.rdir = k.dir
				if t.fullTree {
					k.rdir = t.linkDir(n.rdir, k.link)
				}
				if !filepath.IsAbs(k.link) {
					// tree builds this path in the buffer that holds the
					// name -f prints, so -f shows it instead of the link's.
					k.path = k.dir
				}
			}
		} else {
			k.isDir = e.Type.IsDir()
		}
		if t.o.gitignore && t.ignored(p, name, k.isDir) {
			continue
		}
		if !k.isDir || (k.link != "" && !t.o.follow) {
			// Files, and links not followed, are what -P filters.
			if len(include) > 0 && !t.matchAny(include, name, k.isDir) {
				continue
			}
		}
		if t.matchAny(t.o.exclude, name, k.isDir) {
			continue
		}
		if t.o.dirsOnly && !k.isDir {
			continue
		}
		n.kids = append(n.kids, k)
	}
	// With --prune or --matchdirs tree reads the whole tree first, in the
	// order each directory lists its entries, and prints it sorted
	// afterwards; with -l that order decides which link to a directory
	// reaches it first.
	if t.fullTree && len(n.kids) == 0 {
		return
	}
	fullTree := t.fullTree && t.o.follow
	order := n.kids
	if t.fullTree {
		order = append([]*node(nil), n.kids...)
	}
	sort.SliceStable(n.kids, func(a, b int) bool {
		ka, kb := n.kids[a], n.kids[b]
		if t.o.dirsFirst && ka.isDir != kb.isDir {
			return ka.isDir
		}
		return ka.name < kb.name
	})
	for _, k := range order {
		if !k.isDir || (k.link != "" && !t.o.follow) {
			continue
		}
		if t.o.follow {
			// tree notes every directory it lists, descended into or not
			// (-L), and refuses a link to one already noted, at any depth.
			key := keyOf(k.linkFi)
			if k.link == "" {
				key = t.dirKey(k)
			}
			seen := t.visited[key]
			t.visited[key] = true
			if seen && k.link != "" {
				k.note = "  [recursive, not followed]"
				continue
			}
		}
		if t.o.level >= 0 && depth >= t.o.level {
			continue
		}
		t.read(k, depth+1)
	}
	if t.o.prune || fullTree {
		kept := n.kids[:0]
		for _, k := range n.kids {
			// tree keeps an empty directory whose name --matchdirs
			// matches.
			if t.o.prune && k.isDir && len(k.kids) == 0 &&
				!(t.o.matchDirs && len(t.o.include) > 0 && t.matchAny(t.o.include, k.name, true)) {
				continue
			}
			if fullTree && k.isDir && k.link != "" {
				// When printing, tree checks each link again against
				// every directory the first pass noted, its own target
				// included: a link is shown as recursive and not
				// descended into, even where -L stops anyway.
				k.note = "  [recursive, not followed]"
				k.kids = nil
			}
			kept = append(kept, k)
		}
		n.kids = kept
		if t.fullTree && len(n.kids) == 0 {
			return
		}
	}
	pop()
}

// belowRoot is the end of dir, a directory lev levels below a root, that
// tree matches --matchdirs patterns against: its last lev components, or
// all of dir when it has fewer slashes (a followed link's target).
func belowRoot(dir string, lev int) string {
	i := len(dir)
	for i > 0 {
		if i < len(dir) && dir[i] == '/' {
			lev--
		}
		if lev <= 0 {
			if i < len(dir) {
				i++
			}
			break
		}
		i--
	}
	return dir[i:]
}

// joinName is the path of entry name in directory dir as tree's read_dir
// builds it: no '/' added after one.
func joinName(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// linkDir is the path tree reads a followed link to a directory through:
// the target itself when absolute, else the target joined to the link's
// directory, unresolved ("a/b/.." for a link to ".." in a/b).
func (t *lister) linkDir(dir, target string) string {
	switch {
	case filepath.IsAbs(target):
		return target
	case t.o.fullPath && dir == "/":
		return dir + target
	}
	return dir + "/" + target
}

// dirKey identifies directory k (not a link) for loop detection.
func (t *lister) dirKey(k *node) fileKey {
	if k.fi != nil {
		return keyOf(k.fi)
	}
	fi, err := os.Lstat(t.abs(k.rdir))
	if err != nil {
		return fileKey{}
	}
	return keyOf(fi)
}

// matchAny reports whether name matches one of pats as -P and -I
// want: any non-zero patmatch result, a malformed pattern's included.
func (t *lister) matchAny(pats []string, name string, isdir bool) bool {
	for _, p := range pats {
		if t.m.match(name, p, isdir) != patMismatch {
			return true
		}
	}
	return false
}

func (t *lister) printRoot(n *node) {
	t.info(n)
	t.w.WriteString(escape(n.name))
	if t.o.classify {
		t.w.WriteString(t.mark(n.fi))
	}
}

// printKids prints n's entries; last[i] says whether the ancestor at
// level i was the last of its siblings.
func (t *lister) printKids(n *node, last []bool) {
	lines := t.lines
	for i, k := range n.kids {
		isLast := i == len(n.kids)-1
		if !t.o.noIndent {
			for _, l := range last {
				if l {
					t.w.WriteString(lines[3])
				} else {
					t.w.WriteString(lines[2])
				}
			}
			if isLast {
				t.w.WriteString(lines[1])
			} else {
				t.w.WriteString(lines[0])
			}
		}
		t.info(k)
		if t.o.fullPath {
			t.w.WriteString(escape(k.path))
		} else {
			t.w.WriteString(escape(k.name))
		}
		if k.link != "" {
			t.w.WriteString(" -> ")
			t.w.WriteString(escape(k.link))
			if t.o.classify && k.linkFi != nil {
				t.w.WriteString(t.mark(k.linkFi))
			}
		} else if t.o.classify {
			t.w.WriteString(t.mark(k.fi))
		}
		t.w.WriteString(k.note)
		t.w.WriteByte('\n')
		if k.isDir {
			t.dirs++
		} else {
			t.files++
		}
		if len(k.kids) > 0 {
			t.printKids(k, append(last, isLast))
		}
	}
}

// mark is -F's suffix for a file of fi's type, as tree's Ftype gives it:
// with -d a directory has none, and only a root can show a link's '@'.
func (t *lister) mark(fi fs.FileInfo) string {
	m := fi.Mode()
	switch {
	case m.IsDir():
		if t.o.dirsOnly {
			return ""
		}
		return "/"
	case m&fs.ModeSocket != 0:
		return "="
	case m&fs.ModeNamedPipe != 0:
		return "|"
	case m&fs.ModeSymlink != 0:
		return "@"
	case m.IsRegular() && m.Perm()&0o111 != 0:
		return "*"
	}
	return ""
}

// info prints the "[size]  " block for -s/-h.
func (t *lister) info(n *node) {
	if !t.o.size && !t.o.human {
		return
	}
	t.w.WriteByte('[')
	t.w.WriteString(sizeField(n.fi.Size(), t.o.human)[1:])
	t.w.WriteString("]  ")
}

// sizeField formats a size as tree's psize does, leading space included.
func sizeField(size int64, human bool) string {
	if !human {
		return fmt.Sprintf(" %11d", size)
	}
	const unit = "BKMGTPEZY"
	const usize = 1024
	idx := 0
	if size >= usize {
		idx = 1
	}
	for ; size >= usize*usize; idx++ {
		size /= usize
	}
	if idx == 0 {
		return fmt.Sprintf(" %4d", size)
	}
	v := float64(float32(size) / float32(usize))
	if size/usize >= 10 {
		return fmt.Sprintf(" %3.0f%c", v, unit[idx])
	}
	return fmt.Sprintf(" %3.1f%c", v, unit[idx])
}

// escape prints a name as tree does in the C locale: backslash escapes for
// \a..\r, '\\' and ' ', octal for other unprintable bytes.
func escape(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '\\' || c == ' ' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 7 && c <= 13:
			b.WriteByte('\\')
			b.WriteByte("abtnvfr"[c-7])
		case c == '\\' || c == ' ':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03o", c)
		}
	}
	return b.String()
}
