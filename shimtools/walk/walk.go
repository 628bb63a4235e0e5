// Package walk lists the files under a set of roots, honouring ignore files,
// override globs, file types and hidden names the way ripgrep 13 does. It
// walks in parallel (a bounded pool of workers, each reading a directory and
// visiting its files inline) or, with one thread or when sorted output is
// asked for, with one goroutine depth first, as ripgrep's single-threaded
// walker does: each subdirectory is walked where it stands among its
// siblings, in the order the directory lists them or sorted.
//
// It does not read file contents beyond ignore files; the visitor does.
package walk

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"buzzbox/shimtools/ignore"
)

// Options configure a walk. The zero value walks "." with every ignore rule
// on, hidden files skipped, symlinks not followed, no depth limit, in
// parallel.
type Options struct {
	// Roots are the paths given on the command line. Empty means the
	// current directory, printed without a "./" prefix.
	Roots []string
	// Hidden includes names starting with '.'.
	Hidden bool
	// NoIgnore disables every ignore file (.gitignore, .ignore, .rgignore,
	// .git/info/exclude, global excludes).
	NoIgnore bool
	// NoVCS disables .gitignore, .git/info/exclude and global excludes,
	// keeping .ignore and .rgignore.
	NoVCS bool
	// Follow follows symbolic links.
	Follow bool
	// MaxDepth limits descent; entries directly in a root have depth 1.
	// Negative means no limit.
	MaxDepth int
	// Sorted walks with one goroutine in file-name order.
	Sorted bool
	// SortBy, with Sorted, orders each directory by "modified",
	// "accessed" or "created" time instead of by name ("" or "path").
	SortBy string
	// Reverse, with Sorted, reverses the order.
	Reverse bool
	// Threads is the number of workers; below 1 means one.
	Threads int
	// Overrides are -g globs; nil means none.
	Overrides *ignore.Overrides
	// Types are -t/-T selections; nil means none.
	Types *ignore.Types
	// Global is the global git excludes file; nil means none.
	Global *ignore.Matcher
	// Dir is the working directory relative roots are resolved against;
	// empty means the process's own.
	Dir string
	// OnlyFiles visits only regular files (and followed links to them);
	// false also visits directories (tree needs them).
	IncludeDirs bool
	// Warn, when set, is told of each ignore file line that does not
	// compile (an *ignore.LineError), from any worker.
	Warn func(error)
}

// Entry is one path handed to the visitor.
type Entry struct {
	// Path is the path as printed: root-joined, or bare below an implicit root.
	Path string
	// Explicit marks a root named on the command line.
	Explicit bool
	// Dir marks a directory (only with IncludeDirs).
	Dir bool
	// Depth is 0 for a root, 1 for its children, and so on.
	Depth int
}

// Visitor is called for every file (in parallel from several workers, each
// with its own worker index below Threads). Returning false stops the walk.
type Visitor func(e Entry, worker int) bool

// ErrorFunc reports a per-path problem (the walk goes on). path is as
// printed, with "./" in front when the root was implicit, as ripgrep
// prints it in messages.
type ErrorFunc func(path string, err error)

// Walk visits every file under the roots. It returns when all workers are done.
func Walk(ctx context.Context, o Options, visit Visitor, report ErrorFunc) {
	w := &walker{o: o, visit: visit, report: report, ctx: ctx}
	if w.o.Threads < 1 || w.o.Sorted {
		w.o.Threads = 1
	}
	roots := o.Roots
	implicit := false
	if len(roots) == 0 {
		roots = []string{"./"}
		implicit = true
	}
	for _, root := range roots {
		if w.stopped() {
			return
		}
		w.walkRoot(root, implicit)
	}
}

type walker struct {
	o      Options
	visit  Visitor
	report ErrorFunc
	ctx    context.Context
	quit   atomic.Bool
	// implicit is set while walking the implicit root "./".
	implicit bool
	// above caches the ignore chain of each directory above a root.
	above map[string]*ignore.Dir
}

func (w *walker) stopped() bool {
	if w.quit.Load() {
		return true
	}
	if w.ctx.Err() != nil {
		w.quit.Store(true)
		return true
	}
	return false
}

func (w *walker) abs(p string) string {
	if filepath.IsAbs(p) || w.o.Dir == "" {
		return p
	}
	return filepath.Join(w.o.Dir, p)
}

// job is one directory to read.
type job struct {
	path  string // as printed, with a trailing '/' only for the root "./"
	rel   string // below the root
	depth int
	dir   *ignore.Dir
	// ancestors holds the device/inode of followed directories, for loop
	// detection with Follow.
	ancestors []fileID
}

type fileID struct{ dev, ino uint64 }

// dirent is one directory entry: its name and type bits (fs.ModeDir,
// fs.ModeSymlink, 0 for a regular file, fs.ModeIrregular otherwise).
type dirent struct {
	name string
	typ  fs.FileMode
}

// Dirent is one directory entry as ReadDir returns it.
type Dirent struct {
	Name string
	// Type holds fs.ModeDir, fs.ModeSymlink, 0 for a regular file or
	// fs.ModeIrregular for anything else.
	Type fs.FileMode
}

// ReadDir lists a directory in the order the system returns it, with the
// cheapest system calls the platform offers (getdents64 on Linux).
func ReadDir(path string) ([]Dirent, error) {
	ents, err := readDir(path)
	out := make([]Dirent, len(ents))
	for i, e := range ents {
		out[i] = Dirent{Name: e.name, Type: e.typ}
	}
	return out, err
}

// unwrapPath drops the *fs.PathError wrapping, whose path and operation
// the caller prints its own way.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (w *walker) walkRoot(root string, implicit bool) {
	w.implicit = implicit
	fi, err := os.Stat(w.abs(root))
	if err != nil {
		w.report(root, err)
		return
	}
	if !fi.IsDir() {
		if !w.visit(Entry{Path: root, Explicit: true}, 0) {
			w.quit.Store(true)
		}
		return
	}
	if w.o.IncludeDirs {
		if !w.visit(Entry{Path: root, Explicit: true, Dir: true}, 0) {
			w.quit.Store(true)
			return
		}
	}
	if w.o.MaxDepth == 0 {
		return
	}
	var top *ignore.Dir
	if !w.o.NoIgnore {
		top = w.parents(root)
	}
	start := job{path: root, depth: 0, dir: top}
	if implicit {
		start.path = ""
	}
	if w.o.Follow {
		start.ancestors = []fileID{idOf(fi)}
	}
	if w.o.Threads == 1 {
		w.runSerial(start)
		return
	}
	w.runParallel(start)
}

// parents builds the ignore chain of the directories above root, outermost
// first, as ripgrep reads ignore files of every parent directory.
func (w *walker) parents(root string) *ignore.Dir {
	abs, err := filepath.Abs(w.abs(root))
	if err != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	var chain []string
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	var top *ignore.Dir
	for i := len(chain) - 1; i >= 0; i-- {
		d := chain[i]
		if d == abs {
			continue
		}
		// ripgrep 13 builds each parent directory once per run, for the
		// first root below it, and keeps that root's path in it.
		if cached, ok := w.above[d]; ok {
			top = cached
			continue
		}
		down, err := filepath.Rel(d, abs)
		if err != nil || down == "." {
			continue
		}
		f := w.readIgnoreFiles(d, d, nil)
		top = top.Above(filepath.ToSlash(down), filepath.ToSlash(d), f)
		if w.above == nil {
			w.above = map[string]*ignore.Dir{}
		}
		w.above[d] = top
	}
	return top
}

// readIgnoreFiles reads the ignore files of directory dir, shown as
// display in warnings. names, when not nil, lists the directory's entries
// so absent files cost no syscall.
func (w *walker) readIgnoreFiles(dir, display string, names map[string]bool) ignore.Files {
	var f ignore.Files
	has := func(n string) bool {
		if names != nil {
			return names[n]
		}
		_, err := os.Lstat(filepath.Join(dir, n))
		return err == nil
	}
	load := func(n string) *ignore.Matcher {
		if !has(n) {
			return nil
		}
		data, err := readCapped(filepath.Join(dir, n))
		if err != nil {
			return nil
		}
		return w.warn(ignore.Parse(join(display, n), data, false))
	}
	f.Custom = load(".rgignore")
	f.Ignore = load(".ignore")
	if w.o.NoVCS {
		return f
	}
	f.Git = load(".gitignore")
	if has(".git") {
		f.HasGit = true
		if data, err := readCapped(filepath.Join(dir, ".git", "info", "exclude")); err == nil {
			f.Exclude = w.warn(ignore.Parse(join(display, ".git/info/exclude"), data, false))
		}
	}
	return f
}

// warn passes m's errors to Options.Warn and returns m.
func (w *walker) warn(m *ignore.Matcher) *ignore.Matcher {
	if w.o.Warn != nil {
		for _, err := range m.Errors {
			w.o.Warn(err)
		}
	}
	return m
}

func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, ignore.MaxIgnoreFile))
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// process reads one directory and visits its files, handing each
// subdirectory still to walk to out where it stands among them (in name
// order when sorted).
func (w *walker) process(j job, worker int, sorted bool, out func(job)) {
	full := j.path
	if full == "" {
		full = "."
	}
	ents, err := readDir(w.abs(full))
	if err != nil && len(ents) == 0 {
		w.report(w.errPath(j.path), unwrapPath(err))
		return
	}
	if sorted {
		w.sortEntries(full, ents)
	}
	dir := j.dir
	if !w.o.NoIgnore {
		names := make(map[string]bool, 4)
		for _, e := range ents {
			switch e.name {
			case ".gitignore", ".ignore", ".rgignore", ".git":
				names[e.name] = true
			}
		}
		if len(names) > 0 || j.dir == nil {
			dir = j.dir.Child(j.rel, w.readIgnoreFiles(w.abs(full), w.errPath(j.path), names))
		}
	}
	depth := j.depth + 1
	for _, e := range ents {
		if w.stopped() {
			return
		}
		name := e.name
		path := join(j.path, name)
		rel := name
		if j.rel != "" {
			rel = j.rel + "/" + name
		}
		typ := e.typ
		isDir := typ.IsDir()
		isLink := typ&fs.ModeSymlink != 0
		var linkInfo fs.FileInfo
		if isLink {
			if !w.o.Follow {
				continue
			}
			fi, err := os.Stat(w.abs(path))
			if err != nil {
				w.report(w.errPath(path), err)
				continue
			}
			linkInfo = fi
			isDir = fi.IsDir()
			typ = fi.Mode().Type()
		}
		if !w.keep(path, rel, name, isDir, dir) {
			continue
		}
		if isDir {
			if w.o.MaxDepth >= 0 && depth > w.o.MaxDepth {
				continue
			}
			nj := job{path: path, rel: rel, depth: depth, dir: dir}
			if w.o.Follow {
				var id fileID
				if linkInfo != nil {
					id = idOf(linkInfo)
				} else if fi, err := os.Stat(w.abs(path)); err == nil {
					id = idOf(fi)
				}
				loop := false
				for _, a := range j.ancestors {
					if a == id {
						loop = true
						break
					}
				}
				if loop {
					w.report(w.errPath(path), &LoopError{Ancestor: w.errPath(ancestorPath(j, id))})
					continue
				}
				nj.ancestors = append(append([]fileID(nil), j.ancestors...), id)
			}
			if w.o.MaxDepth >= 0 && depth == w.o.MaxDepth {
				// Directories at the limit are still entries, but not read.
				if w.o.IncludeDirs && !w.visit(Entry{Path: path, Dir: true, Depth: depth}, worker) {
					w.quit.Store(true)
				}
				continue
			}
			out(nj)
			continue
		}
		if !typ.IsRegular() && !w.o.IncludeDirs {
			continue
		}
		if w.o.MaxDepth >= 0 && depth > w.o.MaxDepth {
			continue
		}
		if !w.visit(Entry{Path: path, Depth: depth}, worker) {
			w.quit.Store(true)
			return
		}
	}
}

func ancestorPath(j job, id fileID) string {
	// The walk keeps ids, not names, of ancestors; ripgrep names the
	// ancestor directory. Walk back up the printed path.
	p := j.path
	for i := len(j.ancestors) - 1; i > 0 && j.ancestors[i] != id; i-- {
		if k := strings.LastIndexByte(strings.TrimSuffix(p, "/"), '/'); k >= 0 {
			p = p[:k]
		}
	}
	return p
}

// keep applies ripgrep's decision order to one entry.
func (w *walker) keep(path, rel, name string, isDir bool, dir *ignore.Dir) bool {
	if !w.o.Overrides.Empty() {
		switch w.o.Overrides.Match(strings.TrimPrefix(path, "./"), isDir) {
		case ignore.Ignore:
			return false
		case ignore.Whitelist:
			return true
		}
	}
	white := false
	if !w.o.NoIgnore {
		switch dir.Match(rel, path, isDir) {
		case ignore.Ignore:
			return false
		case ignore.Whitelist:
			white = true
		}
		if !white && w.o.Global != nil && dir.AnyGit() {
			switch d, _ := w.o.Global.Match(strings.TrimPrefix(path, "./"), isDir); d {
			case ignore.Ignore:
				return false
			case ignore.Whitelist:
				white = true
			}
		}
	}
	switch w.o.Types.Match(name, isDir) {
	case ignore.Ignore:
		return false
	case ignore.Whitelist:
		white = true
	}
	if !white && !w.o.Hidden && strings.HasPrefix(name, ".") {
		return false
	}
	return true
}

// errPath is how a path appears in messages: below an implicit root it
// gets the "./" that ripgrep's walker sees.
func (w *walker) errPath(p string) string {
	if w.implicit {
		return "./" + p
	}
	return p
}

// LoopError reports a followed link that leads back to an ancestor.
type LoopError struct{ Ancestor string }

func (e *LoopError) Error() string { return "points to an ancestor " + e.Ancestor }

// runSerial walks depth first with the calling goroutine, descending into
// each subdirectory as it is met, in directory order unless Sorted.
func (w *walker) runSerial(start job) {
	var rec func(j job)
	rec = func(j job) {
		w.process(j, 0, w.o.Sorted, func(sub job) {
			if !w.stopped() {
				rec(sub)
			}
		})
	}
	rec(start)
}

// runParallel walks with Threads workers sharing a LIFO stack of directories.
// Each worker exits when the stack is empty and no worker is busy (nothing
// more can arrive) or when the walk is stopped.
func (w *walker) runParallel(start job) {
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		stack   = []job{start}
		busy    int
		wg      sync.WaitGroup
		threads = w.o.Threads
	)
	for i := 0; i < threads; i++ {
		wg.Add(1)
		// Each worker stops when the shared stack drains with nobody busy.
		go func(worker int) {
			defer wg.Done()
			var pending []job
			push := func(j job) { pending = append(pending, j) }
			for {
				mu.Lock()
				for len(stack) == 0 && busy > 0 && !w.quit.Load() {
					cond.Wait()
				}
				if len(stack) == 0 || w.quit.Load() {
					mu.Unlock()
					cond.Broadcast()
					return
				}
				j := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				busy++
				mu.Unlock()

				pending = pending[:0]
				if !w.stopped() {
					w.process(j, worker, false, push)
				}

				mu.Lock()
				for k := len(pending) - 1; k >= 0; k-- {
					stack = append(stack, pending[k])
				}
				busy--
				done := busy == 0 && len(stack) == 0
				mu.Unlock()
				// Wake sleepers only when there is work for them or the
				// walk is over; a wake-up per directory costs futex calls.
				switch {
				case done || w.quit.Load():
					cond.Broadcast()
				case len(pending) == 1:
					cond.Signal()
				case len(pending) > 1:
					cond.Broadcast()
				}
			}
		}(i)
	}
	wg.Wait()
}

// Message formats an I/O error about path the way ripgrep 13 prints it:
// "path: No such file or directory (os error 2)".
func Message(path string, err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return path + ": " + Strerror(errno) + " (os error " + itoa(int(errno)) + ")"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return path + ": " + pe.Err.Error()
	}
	return path + ": " + err.Error()
}

// Strerror returns the C library's message for errno (Go's table lowercases
// the first letter; the C one does not).
func Strerror(errno syscall.Errno) string {
	s := errno.Error()
	if s != "" && 'a' <= s[0] && s[0] <= 'z' {
		s = string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// sortEntries orders a directory's entries for a sorted walk.
func (w *walker) sortEntries(dir string, ents []dirent) {
	if w.o.SortBy == "" || w.o.SortBy == "path" {
		sort.SliceStable(ents, func(a, b int) bool {
			if w.o.Reverse {
				return ents[a].name > ents[b].name
			}
			return ents[a].name < ents[b].name
		})
		return
	}
	// ripgrep sorts by the entry's time; entries whose time cannot be
	// read go last.
	times := make([]int64, len(ents))
	ok := make([]bool, len(ents))
	idx := make([]int, len(ents))
	for i, e := range ents {
		idx[i] = i
		stat := os.Lstat
		if w.o.Follow {
			stat = os.Stat
		}
		if fi, err := stat(w.abs(join(dir, e.name))); err == nil {
			times[i], ok[i] = fileTime(w.abs(join(dir, e.name)), fi, w.o.SortBy)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool {
		i, j := idx[a], idx[b]
		if ok[i] != ok[j] {
			return ok[i]
		}
		// Ties keep the directory's own order, as ripgrep's stable sort does.
		if w.o.Reverse {
			return times[i] > times[j]
		}
		return times[i] < times[j]
	})
	sorted := make([]dirent, len(ents))
	for k, i := range idx {
		sorted[k] = ents[i]
	}
	copy(ents, sorted)
}
