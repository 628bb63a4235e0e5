package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
)

// commandDocs are the pages whose commands a reader copies: each `go test`
// they give must name packages, tests, benchmarks and flags that exist,
// and each scripts/ program they name must be there.
var commandDocs = []string{"README.md", "BENCHMARKS.md", "DEVELOPERS.md"}

// minGoTestCommands is a floor on the `go test` commands the scan must
// find in commandDocs; far fewer means it stopped seeing them and the
// check passes vacuously.
const minGoTestCommands = 25

// goTestValueFlags are the go test flags (and the test binary's, which go
// test passes on) that take a value; goTestBoolFlags those that do not.
var (
	goTestValueFlags = map[string]bool{"run": true, "bench": true, "benchtime": true, "count": true, "o": true, "timeout": true,
		"cpu": true, "fuzz": true, "fuzztime": true, "p": true, "tags": true, "skip": true, "parallel": true,
		"coverprofile": true, "cpuprofile": true, "memprofile": true}
	goTestBoolFlags = map[string]bool{"v": true, "c": true, "benchmem": true, "race": true, "short": true, "json": true,
		"failfast": true, "cover": true, "x": true, "n": true}
)

// nothingPatterns are the -run patterns the docs use to run no test
// beside a benchmark.
var nothingPatterns = map[string]bool{"^$": true, "XXX": true, "xxx": true, "NONE": true}

// goTestCommand is one `go test` command found in a document.
type goTestCommand struct {
	where string // file:line
	text  string
}

// docCommands returns the `go test` commands of text (the document rel):
// those in indented code lines and in backtick spans, which may break
// across lines. A command ends at a shell separator or a comment.
func docCommands(rel, text string) []goTestCommand {
	var out []goTestCommand
	add := func(line int, s string) {
		for {
			i := strings.Index(s, "go test ")
			if i < 0 {
				return
			}
			s = s[i:]
			end := len(s)
			for _, sep := range []string{";", "&&", "|", "#", ")", "`"} {
				if j := strings.Index(s, sep); j >= 0 && j < end {
					end = j
				}
			}
			out = append(out, goTestCommand{fmt.Sprintf("%s:%d", rel, line), strings.TrimSpace(s[:end])})
			s = s[end:]
		}
	}
	codeSpans(text, add)
	return out
}

// codeSpans calls fn with the code of text a reader may copy: each
// indented line, then each backtick span with its newlines folded (a span
// may break across lines), with the line where it starts.
func codeSpans(text string, fn func(line int, code string)) {
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t") {
			fn(i+1, l)
		}
	}
	for i := 0; i < len(text); {
		open := strings.IndexByte(text[i:], '`')
		if open < 0 {
			break
		}
		open += i
		closing := strings.IndexByte(text[open+1:], '`')
		if closing < 0 {
			break
		}
		closing += open + 1
		fn(strings.Count(text[:open], "\n")+1, strings.ReplaceAll(text[open+1:closing], "\n", " "))
		i = closing + 1
	}
}

// shellWords splits a command as sh would, for the quoting the docs use
// (single and double quotes, no escapes).
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// testFuncs are the Test, Benchmark and Fuzz functions of a package's
// test files, and the flags its tests define (flag.Bool("update", …)).
type testFuncs struct {
	tests, benches, fuzzes []string
	flags                  map[string]bool
}

var (
	funcDecl = regexp.MustCompile(`(?m)^func ((Test|Benchmark|Fuzz)\w*)\(`)
	flagDecl = regexp.MustCompile(`flag\.\w+\("([\w.-]+)"`)
)

func readTestFuncs(dir string) (testFuncs, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		return testFuncs{}, fmt.Errorf("no test files in %s", dir)
	}
	tf := testFuncs{flags: map[string]bool{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return testFuncs{}, err
		}
		for _, m := range funcDecl.FindAllStringSubmatch(string(b), -1) {
			switch m[2] {
			case "Test":
				if m[1] != "TestMain" {
					tf.tests = append(tf.tests, m[1])
				}
			case "Benchmark":
				tf.benches = append(tf.benches, m[1])
			case "Fuzz":
				tf.fuzzes = append(tf.fuzzes, m[1])
			}
		}
		for _, m := range flagDecl.FindAllStringSubmatch(string(b), -1) {
			tf.flags[m[1]] = true
		}
	}
	return tf, nil
}

// matching returns the names of fns that go test's pattern selects at
// the top level (the part before the first '/').
func matching(pattern string, fns []string) ([]string, error) {
	top, _, _ := strings.Cut(pattern, "/")
	re, err := regexp.Compile(top)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range fns {
		if re.MatchString(f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// checkGoTest returns what is wrong with one documented `go test`
// command run from root: a package that is not there, a flag go test does
// not know (nor the package's tests define), a -bench, -fuzz or -run
// pattern that selects nothing (a -run beside -bench may select nothing:
// that is its purpose), or a command that runs nothing.
func checkGoTest(root, cmd string) []string {
	words := shellWords(cmd)
	if len(words) < 2 || words[0] != "go" || words[1] != "test" {
		return []string{"not a go test command"}
	}
	var problems []string
	values := map[string]string{}
	var pkgs, custom []string
	for i := 2; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			pkgs = append(pkgs, w)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
		switch {
		case goTestValueFlags[name]:
			if !hasVal {
				if i+1 >= len(words) {
					problems = append(problems, "-"+name+" without a value")
					continue
				}
				i++
				val = words[i]
			}
			values[name] = val
		case goTestBoolFlags[name]:
		default:
			custom = append(custom, name)
			if !hasVal && i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") && !strings.HasPrefix(words[i+1], ".") {
				i++ // its value
			}
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	var all testFuncs
	all.flags = map[string]bool{}
	for _, p := range pkgs {
		if p == "./..." {
			continue // the whole tree: there by definition
		}
		if !strings.HasPrefix(p, "./") && p != "." {
			problems = append(problems, fmt.Sprintf("package %q is not a path in the tree (./…)", p))
			continue
		}
		tf, err := readTestFuncs(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			problems = append(problems, fmt.Sprintf("package %s: %v", p, err))
			continue
		}
		all.tests = append(all.tests, tf.tests...)
		all.benches = append(all.benches, tf.benches...)
		all.fuzzes = append(all.fuzzes, tf.fuzzes...)
		for f := range tf.flags {
			all.flags[f] = true
		}
	}
	if len(problems) > 0 {
		return problems
	}
	for _, f := range custom {
		if !all.flags[f] {
			problems = append(problems, fmt.Sprintf("-%s is neither a go test flag nor one the package's tests define", f))
		}
	}
	selects := func(flag string, fns []string) int {
		pat, ok := values[flag]
		if !ok {
			return -1
		}
		got, err := matching(pat, fns)
		if err != nil {
			problems = append(problems, fmt.Sprintf("-%s %q: %v", flag, pat, err))
		}
		return len(got)
	}
	benches, fuzzes, tests := selects("bench", all.benches), selects("fuzz", all.fuzzes), selects("run", all.tests)
	switch {
	case benches == 0:
		problems = append(problems, fmt.Sprintf("-bench %q selects no benchmark of %v (it has %v)", values["bench"], pkgs, all.benches))
	case fuzzes == 0:
		problems = append(problems, fmt.Sprintf("-fuzz %q selects no fuzz test of %v", values["fuzz"], pkgs))
	case tests == 0 && benches < 0 && fuzzes < 0 && !goTestBoolFlag(words, "c"):
		problems = append(problems, fmt.Sprintf("-run %q selects no test of %v, and nothing else is run", values["run"], pkgs))
	case tests > 0 && benches > 0 && nothingPatterns[values["run"]]:
		problems = append(problems, fmt.Sprintf("-run %q, meant to run no test beside the benchmarks, selects %d", values["run"], tests))
	}
	return problems
}

func goTestBoolFlag(words []string, name string) bool {
	for _, w := range words {
		if w == "-"+name || w == "--"+name {
			return true
		}
	}
	return false
}

// scriptRef finds scripts/ programs named in prose or commands.
var scriptRef = regexp.MustCompile(`\bscripts/[\w.-]+\.sh\b`)

// TestDocumentedCommandsExist walks the commands README.md, BENCHMARKS.md
// and DEVELOPERS.md give: every `go test` must name packages, flags,
// tests and benchmarks that exist (BENCHMARKS.md once gave commands for
// benchmarks since renamed), every scripts/*.sh named must be there and
// executable, and so must the `go test` lines of those scripts.
// scripts/test.sh runs each benchmark once, so a command that names one
// also runs.
func TestDocumentedCommandsExist(t *testing.T) {
	n := 0
	scripts := map[string]bool{} // checked already
	for _, doc := range commandDocs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range docCommands(doc, string(b)) {
			n++
			for _, p := range checkGoTest(".", c.text) {
				t.Errorf("%s: %s: %s", c.where, c.text, p)
			}
		}
		for _, s := range scriptRef.FindAllString(string(b), -1) {
			fi, err := os.Stat(s)
			if err != nil || fi.Mode().Perm()&0o111 == 0 {
				t.Errorf("%s names %s: %v; want an executable file", doc, s, err)
				continue
			}
			if scripts[s] || s == "scripts/test.sh" { // test.sh computes its packages
				continue
			}
			scripts[s] = true
			body, _ := os.ReadFile(s)
			for i, l := range strings.Split(string(body), "\n") {
				if j := strings.Index(l, "go test "); j >= 0 && !strings.HasPrefix(strings.TrimSpace(l), "#") {
					n++
					for _, p := range checkGoTest(".", l[j:]) {
						t.Errorf("%s:%d (named in %s): %s: %s", s, i+1, doc, strings.TrimSpace(l[j:]), p)
					}
				}
			}
		}
	}
	if n < minGoTestCommands {
		t.Errorf("found %d go test commands in %v; want at least %d (did the scan stop seeing them?)", n, commandDocs, minGoTestCommands)
	}
}

// TestGoTestCommandChecker: the checker finds each kind of rot, so
// TestDocumentedCommandsExist can fail.
func TestGoTestCommandChecker(t *testing.T) {
	for _, tc := range []struct {
		cmd, want string // want: a substring of a problem; "" none
	}{
		{"go test ./relay -run '^$' -bench Publish -benchtime 4000x -count 3", ""},
		{"go test -run=NONE -bench=Startup -benchtime=300x -count=5 ./dispatch", ""},
		{"go test ./agent -run TestLongSessionStaysWithinHistoryBudget -v", ""},
		{"go test ./shimtools/rustregex -update", ""},
		{"go test -c -o /tmp/harness.test ./harness", ""},
		{"go test ./relay -run '^$' -bench Publsh", "selects no benchmark"},
		{"go test ./relay/nowhere -bench .", "no test files"},
		{"go test ./agent -run TestNoSuchTest", "selects no test"},
		{"go test ./relay -bench Publish -benchtme 1x", "-benchtme is neither"},
		{"go test ./relay -run . -bench Publish", ""},
		{"go test ./relay -run XXX -bench Publish", ""},
	} {
		got := strings.Join(checkGoTest(".", tc.cmd), "; ")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("checkGoTest(%q) = %q; want %q", tc.cmd, got, tc.want)
		}
	}
	cmds := docCommands("x.md", "a `go test ./relay -run xxx\n-bench Fanout` b\n\n    cd relay; go test ./cli -bench . # note\n")
	if len(cmds) != 2 || cmds[0].text != "go test ./cli -bench ." || cmds[1].text != "go test ./relay -run xxx -bench Fanout" || cmds[1].where != "x.md:1" {
		t.Errorf("docCommands = %+v; want the indented command and the span across lines", cmds)
	}
}

// toolNames are the identities a documented command may start with.
var toolNames = map[string]bool{"buzzbox": true, "buzz": true, "buzz-relay": true, "buzz-acp": true, "buzz-agent": true,
	"buzz-dev-mcp": true, "rg": true, "tree": true, "git-credential-nostr": true, "git-sign-nostr": true}

// toolCommand is a documented command of one of buzzbox's tools: the
// words that select it (tool, then for buzz its group and command, for
// buzzbox its subcommand) and the --flags it passes.
type toolCommand struct {
	where string
	path  []string
	flags []string
}

// placeholder is a word standing for a value (DIR, <uuid>, NAME, …).
var placeholder = regexp.MustCompile(`^(<.*>|[A-Z][A-Z_]*|…|\.\.\.)$`)

// docToolCommands returns the tool commands in text's indented lines and
// backtick spans; alternatives spelled a|b|c become one command each.
func docToolCommands(rel, text string) []toolCommand {
	var out []toolCommand
	scan := func(line int, s string) {
		words := shellWords(s)
		for i := 0; i < len(words); i++ {
			w := strings.TrimPrefix(words[i], "./")
			if !toolNames[w] || i > 0 && strings.HasPrefix(words[i-1], "-") {
				continue
			}
			var rest []string
			for _, r := range words[i+1:] {
				if r == "|" || r == ";" || r == "&&" || r == "#" || r == "\\" || strings.HasPrefix(r, "#") {
					break
				}
				rest = append(rest, r)
			}
			depth := map[string]int{"buzz": 2, "buzzbox": 1}[w]
			paths := [][]string{{w}}
			var flags []string
			for _, r := range rest {
				r = strings.Trim(r, "[]…,.")
				switch {
				case strings.HasPrefix(r, "--"):
					name, _, _ := strings.Cut(r, "=")
					flags = append(flags, name)
					depth = 0
				case depth > 0 && !placeholder.MatchString(r) && regexp.MustCompile(`^[a-z][a-z|-]*$`).MatchString(r):
					var next [][]string
					for _, p := range paths {
						for _, alt := range strings.Split(r, "|") {
							next = append(next, append(append([]string(nil), p...), alt))
						}
					}
					paths = next
					depth--
				default:
					depth = 0
				}
			}
			for _, p := range paths {
				out = append(out, toolCommand{fmt.Sprintf("%s:%d", rel, line), p, flags})
			}
			i += len(rest)
		}
	}
	codeSpans(text, scan)
	return out
}

// TestDocumentedToolCommandsExist runs `--help` of every tool command
// README.md, BENCHMARKS.md and DEVELOPERS.md give (the group and command for buzz, the subcommand for
// buzzbox) on the built executable: each must exist and list every flag
// the command passes.
func TestDocumentedToolCommandsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built executable")
	}
	var cmds []toolCommand
	for _, doc := range commandDocs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, docToolCommands(doc, string(b))...)
	}
	if len(cmds) < minToolCommands {
		t.Fatalf("found %d tool commands in %v; want at least %d (did the scan stop seeing them?)", len(cmds), commandDocs, minToolCommands)
	}
	helps := map[string]string{}
	for _, c := range cmds {
		key := strings.Join(c.path, " ")
		help, ok := helps[key]
		if !ok {
			exe := testexe.Path(t)
			args := c.path[1:]
			if c.path[0] != "buzzbox" {
				exe = testexe.Link(t, c.path[0])
			}
			stdout, stderr, code := testexe.Run(t, exec.Command(exe, append(args, "--help")...))
			if code != 0 {
				t.Errorf("%s: %s --help: exit %d, %s; the command README gives does not exist", c.where, key, code, strings.TrimSpace(stderr))
			}
			help = stdout
			helps[key] = help
		}
		for _, f := range c.flags {
			if !regexp.MustCompile(`(^|[\s\[,])` + regexp.QuoteMeta(f) + `\b`).MatchString(help) {
				t.Errorf("%s: %s %s: --help does not list %s", c.where, key, f, f)
			}
		}
	}
}

// minToolCommands is a floor on the tool commands commandDocs give.
const minToolCommands = 20

// TestToolCommandScanner: alternatives expand, a podman image name is no
// command, comments end one, and flags in brackets count.
func TestToolCommandScanner(t *testing.T) {
	got := docToolCommands("x.md", "`buzz members add|remove\n--pubkey …` and\n\n    podman run --rm buzzbox buzz-relay --open --listen 0.0.0.0:3000   # note --x\n`buzzbox install [--force] DIR`\n")
	want := []string{"x.md:4 buzz-relay [--open --listen]", "x.md:1 buzz members add [--pubkey]", "x.md:1 buzz members remove [--pubkey]", "x.md:5 buzzbox install [--force]"}
	var have []string
	for _, c := range got {
		have = append(have, fmt.Sprintf("%s %s %v", c.where, strings.Join(c.path, " "), c.flags))
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf("docToolCommands =\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}
