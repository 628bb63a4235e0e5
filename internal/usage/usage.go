// Package usage writes the --help page of an identity whose flags live in a
// flag.FlagSet, and turns the flag package's parse outcomes into the
// house's: --help (or -h) prints the page on stdout and exits 0; a bad flag
// is one line on stderr naming it, then a hint to run --help, exit 2.
//
// Flags are shown as `--name VALUE  description (env VAR, default X)`, in
// the FlagSet's sorted order, never as the flag package's single-dash dump.
// The package does not parse GNU clusters (rg and tree keep their own
// parsers and ripgrep's and GNU tree's own help) and does not know the buzz
// CLI's command table, which writes its pages from that table.
package usage

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Exit codes Parse returns.
const (
	ExitOK    = 0 // --help was printed
	ExitUsage = 2 // a bad flag or argument
)

// Layout of the flag list.
const (
	flagColumn = 26 // where descriptions start; a longer flag puts its description on the next line
	lineWidth  = 80 // descriptions are wrapped to this many columns
)

// Var is one environment variable an identity reads.
type Var struct {
	Name string // exactly as the identity reads it
	Help string // what it sets; empty prints the name alone
}

// Page is the --help page of one identity.
type Page struct {
	// Name is the command as people type it ("buzz-relay", "buzzbox up");
	// it starts the usage line and every error. Required.
	Name string
	// Synopsis follows Name on the usage line ("[flags] DIR"). Empty
	// prints "[flags]" when there are flags.
	Synopsis string
	// About says what the tool does, in paragraphs. Empty prints nothing.
	About string
	// Flags are listed under "Flags:" with their defaults. Nil means the
	// identity takes none; --help is listed either way.
	Flags *flag.FlagSet
	// FlagEnv maps a flag name to the environment variable it falls back
	// to, shown beside the flag. Nil means none does.
	FlagEnv map[string]string
	// Hidden names flags that parse but are not listed (deprecated
	// aliases). Nil lists every flag.
	Hidden map[string]bool
	// Order lists flag names in the order to show them; flags it leaves
	// out follow in sorted order. Nil sorts them all.
	Order []string
	// Placeholders maps a flag name to the word shown for its value,
	// overriding the backquoted word of its usage or its type's name. Nil
	// means none is overridden.
	Placeholders map[string]string
	// Env lists the variables read besides those of FlagEnv, under
	// "Environment:". Nil prints no such section.
	Env []Var
	// More is free text after the environment section (state kept, exit
	// codes). Empty prints nothing.
	More string
	// Examples are command lines, each printed under "Example:" with a
	// two-space indent; a line starting with "#" is a comment. At least
	// one is expected.
	Examples []string
}

// Write prints the page to w.
func (p *Page) Write(w io.Writer) {
	var b strings.Builder
	syn := p.Synopsis
	if syn == "" && p.Flags != nil {
		syn = "[flags]"
	}
	fmt.Fprintf(&b, "usage: %s", p.Name)
	if syn != "" {
		fmt.Fprintf(&b, " %s", syn)
	}
	b.WriteString("\n")
	if p.About != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(p.About, "\n"))
	}
	b.WriteString("\nFlags:\n")
	if p.Flags != nil {
		shown := map[string]bool{}
		show := func(f *flag.Flag) {
			if f == nil || shown[f.Name] || p.Hidden[f.Name] {
				return
			}
			shown[f.Name] = true
			writeFlag(&b, f, p.FlagEnv[f.Name], p.Placeholders[f.Name])
		}
		for _, name := range p.Order {
			show(p.Flags.Lookup(name))
		}
		p.Flags.VisitAll(show)
	}
	writeItem(&b, "--help", "print this help and exit")
	if len(p.Env) > 0 {
		b.WriteString("\nEnvironment:\n")
		for _, v := range p.Env {
			writeItem(&b, v.Name, v.Help)
		}
	}
	if p.More != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(p.More, "\n"))
	}
	if len(p.Examples) > 0 {
		b.WriteString("\nExample:\n")
		for _, e := range p.Examples {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	io.WriteString(w, b.String())
}

// FlagLine returns how Write shows one flag's name and value:
// "--listen ADDRESS", or "--open" for a boolean. A non-empty placeholder
// replaces the value's word.
func FlagLine(f *flag.Flag, placeholder string) string {
	name, _ := flag.UnquoteUsage(f)
	if isBool(f) {
		return "--" + f.Name
	}
	if placeholder != "" {
		return "--" + f.Name + " " + placeholder
	}
	if name == "" {
		name = "value"
	}
	return "--" + f.Name + " " + strings.ToUpper(name)
}

func writeFlag(b *strings.Builder, f *flag.Flag, envVar, placeholder string) {
	_, help := flag.UnquoteUsage(f)
	var notes []string
	if envVar != "" {
		notes = append(notes, "env "+envVar)
	}
	if !zeroDefault(f) {
		notes = append(notes, "default "+f.DefValue)
	}
	if len(notes) > 0 {
		help += " (" + strings.Join(notes, ", ") + ")"
	}
	writeItem(b, FlagLine(f, placeholder), help)
}

// writeItem prints left in the first column and help wrapped beside it.
func writeItem(b *strings.Builder, left, help string) {
	line := "  " + left
	if help == "" {
		b.WriteString(line + "\n")
		return
	}
	if len(line) >= flagColumn-1 {
		b.WriteString(line + "\n")
		line = ""
	}
	line += strings.Repeat(" ", flagColumn-len(line))
	for i, word := range strings.Fields(help) {
		if i > 0 && len(line)+1+len(word) > lineWidth && len(strings.TrimSpace(line)) > 0 {
			b.WriteString(line + "\n")
			line = strings.Repeat(" ", flagColumn) + word
			continue
		}
		if i > 0 {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
}

func isBool(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// zeroDefault reports whether f's default says nothing worth printing.
func zeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "false", "[]":
		return true
	}
	return false
}

// Parse parses args with p.Flags (which must be set) and reports whether
// the caller should return code at once: after printing the page on
// stdout for --help, or one error line and a hint on stderr for a bad flag
// or, when noArgs is set, any argument left over.
func (p *Page) Parse(args []string, noArgs bool, stdout, stderr io.Writer) (code int, done bool) {
	fs := p.Flags
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			p.Write(stdout)
			return ExitOK, true
		}
		p.Fail(stderr, FlagError(err))
		return ExitUsage, true
	}
	if noArgs && fs.NArg() > 0 {
		p.Fail(stderr, fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
		return ExitUsage, true
	}
	return ExitOK, false
}

// Fail prints msg as "<name>: msg" and the hint to run --help.
func (p *Page) Fail(w io.Writer, msg string) {
	fmt.Fprintf(w, "%s: %s\nhint: run '%s --help' for the flags and an example\n", p.Name, msg, p.Name)
}

// FlagError rewrites an error of the flag package in the --flag spelling
// the pages use: "flag provided but not defined: -x" becomes
// "unknown flag --x".
func FlagError(err error) string {
	msg := err.Error()
	for _, r := range []struct{ from, to string }{
		{"flag provided but not defined: -", "unknown flag --"},
		{"flag needs an argument: -", "a value is missing after --"},
	} {
		if rest, ok := strings.CutPrefix(msg, r.from); ok {
			return r.to + strings.TrimPrefix(rest, "-")
		}
	}
	// invalid value "v" for flag -name: cause; invalid boolean value "v" for -name: cause
	for _, lead := range []string{"invalid value ", "invalid boolean value "} {
		rest, ok := strings.CutPrefix(msg, lead)
		if !ok {
			continue
		}
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			break
		}
		tail := strings.TrimPrefix(rest[len(q):], " for")
		tail = strings.TrimPrefix(tail, " flag")
		if name, ok := strings.CutPrefix(tail, " -"); ok {
			return lead + q + " for --" + name
		}
	}
	return msg
}
