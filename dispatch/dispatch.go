// Package dispatch chooses which tool the buzzbox executable becomes.
//
// Synopsis:
//
//	NAME [ARGS...]                  started through a link called NAME
//	buzzbox NAME [ARGS...]          the same, by subcommand
//	buzzbox install [--force] [--copy] DIR
//	buzzbox up [--listen ADDRESS] [--public-url URL]... [--dir DIR]
//	buzzbox [--help | --version]
//
// Description:
//
// The identity is the base name of argv[0] with any extension removed,
// lowercased; a symlink's own name counts, never its target. Started as
// "buzzbox", or under a name that is no identity, the first argument names
// the identity instead. "--version" as the first argument of any identity
// prints the build's version.
//
// Dispatch does nothing before the identity is chosen: no flag parsing, no
// signal handling, no logger. Synchronous identities (rg, tree, the git
// helpers) therefore start as cheaply as a plain Go program; long-running ones
// set up their own signal handling in their Main.
package dispatch

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"buzzbox/internal/caroots"
	"buzzbox/internal/proc"
	"buzzbox/internal/suggest"
)

// Exit codes shared by every identity unless its own spec says otherwise.
const (
	ExitOK    = 0 // success
	ExitNo    = 1 // a negative answer, such as rg finding no match
	ExitUsage = 2 // usage or operational error
)

// selfName is the stem under which the executable dispatches by argument.
const selfName = "buzzbox"

// version is stamped by scripts/build.sh with -ldflags "-X buzzbox/dispatch.version=…".
var version string

// Version returns the build's version: the stamped one, else the module
// version or VCS revision Go recorded, else "devel".
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}

// Main runs the identity named by args and returns the process exit code.
// args is the whole command line, args[0] included.
func Main(args []string) int {
	return run(args, proc.OS)
}

// run is Main with the environment supplied lazily, so nothing is looked up
// before the identity is known.
func run(args []string, mkEnv func() proc.Env) int {
	var argv0 string
	if len(args) > 0 {
		argv0 = args[0]
	}
	name := Resolve(argv0)
	rest := args[min(1, len(args)):]
	id, ok := Lookup(name)
	if !ok {
		if len(rest) == 0 {
			overview(mkEnv().Out()) // the same as --help
			return ExitOK
		}
		switch rest[0] {
		case "-h", "--help", "help":
			overview(mkEnv().Out())
			return ExitOK
		case "--version", "version":
			fmt.Fprintln(mkEnv().Out(), selfName, Version())
			return ExitOK
		}
		if sub, ok := lookupSubcommand(rest[0]); ok {
			return start(sub.Identity, selfName+" "+sub.Name, argv0, rest[1:], mkEnv())
		}
		name = strings.ToLower(rest[0])
		rest = rest[1:]
		if id, ok = Lookup(name); !ok {
			unknown(mkEnv().Err(), name)
			return ExitUsage
		}
	}
	env := mkEnv()
	if len(rest) > 0 && rest[0] == "--version" {
		fmt.Fprintln(env.Out(), selfName, Version())
		return ExitOK
	}
	return start(id, id.Name, argv0, rest, env)
}

// start runs id, called name in messages, with args: the executable's
// path made absolute in env, and the embedded CA roots unless id is Sync.
func start(id Identity, name, argv0 string, args []string, env proc.Env) int {
	fixExe(&env, argv0)
	if !id.Sync {
		installRoots(env, name)
	}
	return id.Main(context.Background(), args, env)
}

// installRoots gives a long-running identity, which may speak HTTPS (LLM
// providers, relays), the embedded CA roots where the system has none
// (scratch containers).
func installRoots(env proc.Env, name string) {
	if err := caroots.Install(env.Getenv); err != nil {
		fmt.Fprintf(env.Err(), "%s: load embedded CA roots: %v\n", name, err)
	}
}

// fixExe fills env.Exe from argv0 when the OS could not say (no /proc in an
// empty root): an absolute or relative path is made absolute.
func fixExe(env *proc.Env, argv0 string) {
	if env.Exe != "" || !strings.ContainsRune(argv0, '/') {
		return
	}
	p := argv0
	if !filepath.IsAbs(p) {
		p = filepath.Join(env.Dir, p)
	}
	env.Exe = filepath.Clean(p)
}

// Resolve returns the identity name argv0 asks for: its base name, without
// extension, lowercased. "/usr/local/bin/RG.exe" resolves to "rg".
func Resolve(argv0 string) string {
	base := argv0
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	// Strip one extension, but not from names like "buzz-dev-mcp" that have
	// none; a leading dot is part of the name.
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return strings.ToLower(base)
}

// Lookup returns the identity called name.
func Lookup(name string) (Identity, bool) {
	for _, id := range Identities() {
		if id.Name == name {
			return id, true
		}
	}
	return Identity{}, false
}

// lookupSubcommand returns buzzbox's subcommand called name.
func lookupSubcommand(name string) (Subcommand, bool) {
	for _, sub := range Subcommands() {
		if sub.Name == name {
			return sub, true
		}
	}
	return Subcommand{}, false
}

// overview is `buzzbox --help`, and what a bare `buzzbox` prints.
func overview(w io.Writer) {
	fmt.Fprintf(w, "buzzbox %s: one executable for a human-and-agent workspace on a Nostr relay\n\n", Version())
	fmt.Fprintf(w, "It becomes the tool it is started as: a link called rg is rg, a link called\nbuzz-relay is the relay. 'buzzbox NAME' does the same without a link.\n\n")
	fmt.Fprintf(w, "Usage:\n")
	usage := [][2]string{
		{"NAME [ARGS...]", "run tool NAME through a link called NAME"},
		{"buzzbox NAME [ARGS...]", "the same, by subcommand"},
	}
	for _, sub := range Subcommands() {
		usage = append(usage, [2]string{selfName + " " + sub.Name + " " + sub.Args, sub.Summary})
	}
	usage = append(usage, [2]string{"buzzbox --version", "print the version"}, [2]string{"buzzbox --help", "print this help"})
	for _, l := range usage {
		if len(l[0]) > 40 {
			fmt.Fprintf(w, "  %s\n  %-40s %s\n", l[0], "", l[1])
			continue
		}
		fmt.Fprintf(w, "  %-40s %s\n", l[0], l[1])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Tools (each takes --help):\n")
	for _, id := range sorted() {
		fmt.Fprintf(w, "  %-22s %s\n", id.Name, id.Summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Environment: buzzbox itself reads none; each tool's --help lists its own\n(buzzbox up --help: the model provider's variables).\n\n")
	fmt.Fprintf(w, "Example:\n")
	fmt.Fprintf(w, "  buzzbox install ~/.local/bin   # then rg, tree, buzz ... run by name\n")
	fmt.Fprintf(w, "  BUZZ_AGENT_PROVIDER=anthropic ANTHROPIC_API_KEY=… ANTHROPIC_MODEL=… buzzbox up\n")
}

func unknown(w io.Writer, name string) {
	fmt.Fprintf(w, "buzzbox: unknown tool %q", name)
	if near := suggest.Nearest(name, names(), 2); near != "" {
		fmt.Fprintf(w, "; did you mean %q?", near)
	}
	fmt.Fprintf(w, "\nknown tools: %s\n", strings.Join(names(), ", "))
	fmt.Fprintf(w, "hint: run 'buzzbox --help' for what each does, or 'buzzbox install DIR' to lay links named after them\n")
}

func sorted() []Identity {
	ids := slices.Clone(Identities())
	slices.SortFunc(ids, func(a, b Identity) int { return strings.Compare(a.Name, b.Name) })
	return ids
}

func names() []string {
	var ns []string
	for _, id := range sorted() {
		ns = append(ns, id.Name)
	}
	return ns
}
