package rg_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
)

// realRG returns the path of ripgrep 13, or skips loudly.
func realRG(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("rg")
	if err != nil {
		t.Skip("SKIP(loud): ripgrep is not installed; apt-get install -y ripgrep (Debian's is 13.0.0) to compare our rg with it")
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil || !bytes.HasPrefix(out, []byte("ripgrep 13.")) {
		t.Skipf("SKIP(loud): %s is not ripgrep 13 (%q); the comparison pins ripgrep 13 output", p, firstLine(out))
	}
	return p
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

// corpus lays out the files the comparison searches: nested ignore files of
// every kind, hidden and binary files, CRLF, invalid UTF-8, a long line,
// symlinks and non-ASCII names.
func corpus(t *testing.T) (dir, home string) {
	t.Helper()
	root := t.TempDir()
	dir = filepath.Join(root, "repo")
	home = filepath.Join(root, "home")
	files := map[string]string{
		".gitignore":                           "*.log\n!keep.log\n/build/\ntmp/\ndocs/**/secret.md\n\\#hash.txt\n",
		"README.md":                            "# Title\nfoo is here\nFOO upper\nnothing\n",
		"src/main.go":                          "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"foo bar\")\n\tfoo := 1\n\t_ = foo\n}\n",
		"src/lib.rs":                           "fn foo() -> u32 {\n    42\n}\n// foobar and foo_bar\nfn bar() {}\n",
		"src/util.py":                          "def foo():\n    return 'Foo'\n\nclass Bar:\n    pass\n",
		"src/app.js":                           "const foo = require('foo');\nmodule.exports = foo;\n",
		"src/style.css":                        "body { color: red; }\n.foo { margin: 0; }\n",
		"src/x.log":                            "foo in a log\n",
		"src/keep.log":                         "foo kept log\n",
		"src/#hash.txt":                        "foo hash\n",
		"src/.gitignore":                       "generated.txt\n!important.txt\n",
		"src/generated.txt":                    "foo generated\n",
		"src/important.txt":                    "foo important\n",
		"src/nested/deep/d.txt":                "deep foo\nline two\nfoo again\n",
		"src/nested/.ignore":                   "ignored_by_dot_ignore.txt\n",
		"src/nested/ignored_by_dot_ignore.txt": "foo dot ignore\n",
		"src/nested/.rgignore":                 "*.rgi\n",
		"src/nested/r.rgi":                     "foo rgignore\n",
		"build/out.txt":                        "foo build\n",
		"lib/build/inner.txt":                  "foo inner build (not anchored at root)\n",
		"tmp/t.txt":                            "foo tmp\n",
		"lib/tmp/t2.txt":                       "foo tmp2\n",
		"docs/a/b/secret.md":                   "foo secret\n",
		"docs/guide.md":                        "Guide\nfoo foo foo\nbar\nbaz\nqux\nfoo\nend\n",
		"docs/crlf.txt":                        "foo\r\nbar\r\nfoo bar\r\n",
		"docs/invalid.txt":                     "foo \xff\xfe bad\nok line\n",
		"docs/nonl.txt":                        "last foo without newline",
		"docs/empty.txt":                       "",
		"docs/ünïcödé/fïlé.txt":                "foo unicode ü\nÜBER foo\n",
		"docs/space name.txt":                  "foo with space\n",
		"excluded_by_info.txt":                 "foo info exclude\n",
		"global_ignored.txt":                   "foo global\n",
		".hidden/h.txt":                        "foo hidden\n",
		".env":                                 "FOO=foo\n",
		"bin/early.bin":                        "foo\x00binary\nfoo again\n",
		"data.json":                            "{\"foo\": [1, 2, 3], \"bar\": \"foo\"}\n",
		"config.yaml":                          "foo: 1\nbar: foo\n",
		"Cargo.toml":                           "[package]\nname = \"foo\"\n",
		"script.sh":                            "#!/bin/sh\necho foo\n",
		"query.sql":                            "SELECT foo FROM bar;\n",
		"page.html":                            "<p>foo</p>\n",
		"Main.java":                            "class Main { int foo; }\n",
		"k.kt":                                 "val foo = 1\n",
		"t.ts":                                 "let foo: number = 1;\n",
		"c.c":                                  "int foo(void);\n",
		"h.hpp":                                "int foo();\n",
		"words.txt":                            "foo foo,foo xfoo foo_ foo\n-foo- (foo) foo.bar\nnotfoo\nFOO Foo fOO\n\nlast\n",
		"docs/fold.txt":                        "the \u212aind of thing\n\u017fome \u017ftring\nKIND plain\nkinder\nstrinG\n",
		"trim.txt":                             "  foo\n\tbar foo\nzzz\n",
		"pats.lst":                             "foo\nbar\n",
		"ctx.txt":                              "a1\nfoo\nb\nc\nd\nfoo\ne\nf\ng\nh\nfoo\nfoo\ni\nj\nk\nl\nm\nfoo\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Binary data after the first 64 KiB: matches before it are printed.
	var big bytes.Buffer
	for i := 0; i < 20000; i++ {
		big.WriteString("foo line\n")
	}
	big.WriteString("bin\x00ary\nfoo after\n")
	write(t, filepath.Join(dir, "bin/late.bin"), big.Bytes())
	// A long line holding a match in the middle.
	long := strings.Repeat("x", 300000) + "foo" + strings.Repeat("y", 300000) + "\nfoo short\n"
	write(t, filepath.Join(dir, "docs/long.txt"), []byte(long))
	// Symlinks: to a file, to a directory, and a dangling one.
	must(t, os.Symlink("../src/main.go", filepath.Join(dir, "docs/link.go")))
	must(t, os.Symlink("../src/nested", filepath.Join(dir, "docs/linkdir")))
	must(t, os.Symlink("nowhere", filepath.Join(dir, "docs/dangling")))
	// A repository: .git/info/exclude and the global excludes file only
	// apply inside one.
	write(t, filepath.Join(dir, ".git/info/exclude"), []byte("excluded_by_info.txt\n"))
	write(t, filepath.Join(dir, ".git/HEAD"), []byte("ref: refs/heads/main\n"))
	write(t, filepath.Join(home, ".config/git/ignore"), []byte("global_ignored.txt\n"))
	return dir, home
}

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, b, 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// compareCases are the flag combinations searched by both tools. A case
// without --sort or -j1 is compared with its output lines sorted.
var compareCases = []string{
	"foo --sort path",
	"foo -j1", // parallel, bin/late.bin prints or not by whether its worker searched docs/long.txt first (its buffer grew), in ripgrep too
	"-n foo --sort path",
	"-N foo --sort path",
	"-i foo --sort path",
	"-S foo --sort path",
	"-S Foo --sort path",
	"-s FOO --sort path",
	"-F foo.bar --sort path",
	"foo.bar --sort path",
	"-w foo --sort path",
	"-w -o foo words.txt",
	"-x foo --sort path",
	"-v foo ctx.txt",
	"-vn foo ctx.txt",
	"-c foo --sort path",
	"-c foo -j1", // as "foo -j1"
	"--count-matches foo --sort path",
	"-co foo words.txt",
	"-c -o -v foo --sort path", // -c -o counts matches, and -v lines hold none
	"--count-matches -o -v foo --sort path",
	"-l foo --sort path",
	"-l foo -j1", // parallel, whether bin/late.bin is listed depends on timing, in ripgrep too
	"--files-without-match foo --sort path",
	"--files-without-match zzz --sort path",
	"-o foo --sort path",
	"-on fo+ --sort path",
	"-m1 foo --sort path",
	"-m 2 -n foo ctx.txt",
	"-A1 foo ctx.txt",
	"-B2 foo ctx.txt",
	"-C1 foo ctx.txt",
	"-C1 -n foo --sort path docs src",
	"-A3 -B1 -n foo ctx.txt",
	"-C2 -v foo ctx.txt",
	"-m2 -A1 foo ctx.txt",
	"-C1 --heading foo --sort path docs",
	"--heading -n foo --sort path",
	"--no-heading foo --sort path",
	"-H foo ctx.txt",
	"--no-filename foo --sort path",
	"-I -n foo --sort path src",
	"-g *.go foo --sort path",
	"-g !*.md foo --sort path",
	"-g src/** foo --sort path",
	"-g **/deep/** foo --sort path",
	"-g *.{rs,py} foo --sort path",
	"-g *.[ch] foo --sort path",
	"--iglob *.MD foo --sort path",
	"-g *.log foo --sort path",
	"-g .env foo --sort path",
	"-t go foo --sort path",
	"-t rust -t py foo --sort path",
	"-T md foo --sort path",
	"-tjs -tcss foo --sort path",
	"-t json -t yaml -t toml foo --sort path",
	"-t sh -t sql -t html foo --sort path",
	"-t java -t kotlin -t ts foo --sort path",
	"-t c -t cpp foo --sort path",
	"--files --sort path",
	"--files",
	"--files -g *.txt --sort path",
	"--files -t md --sort path",
	"--files --hidden --sort path -g !.git",
	"--files --no-ignore --sort path",
	"--files -u --sort path",
	"--files -uu --sort path -g !.git/**",
	"--files -L --sort path",
	"--files --max-depth 1 --sort path",
	"--files --max-depth 2 --sort path src",
	"--files -0 --sort path src",
	"--hidden foo --sort path -g !.git",
	"--no-ignore foo --sort path",
	"-u foo --sort path",
	"-uu foo --sort path -g !.git",
	"-uuu foo --sort path -g !.git",
	"-L foo --sort path",
	"--max-depth 1 foo --sort path",
	"--vimgrep foo --sort path",
	"--vimgrep foo words.txt",
	"--json foo --sort path",
	"--json -C1 foo ctx.txt",
	"--json foo docs/invalid.txt",
	"--color always foo --sort path",
	"--color always -n -C1 foo ctx.txt",
	"--color always -c foo --sort path src",
	"--color never foo --sort path",
	"-0 foo --sort path",
	"-0 -l foo --sort path",
	"-q foo",
	"-q zzz",
	"zzz",
	"foo -g nomatch*",
	"foo -t java -g !*.java",
	"--files -g nomatch*",
	"foo --max-depth 0 .",
	"foo nope",
	"foo nope --sort path",
	"foo src/main.go nope",
	"foo src/main.go",
	"foo src/main.go docs/guide.md",
	"foo bin/early.bin",
	"foo bin/late.bin",
	"-c foo bin/late.bin",
	"-c foo bin/early.bin",
	"foo bin/late.bin src --sort path",
	"foo bin --sort path",
	"-c foo bin --sort path",
	"-l foo bin --sort path",
	"foo docs/long.txt",
	"-o foo docs/long.txt",
	"bar$ docs/crlf.txt",
	"bar docs/crlf.txt",
	"foo docs/nonl.txt",
	"-n foo docs/nonl.txt -C1",
	"-e foo -e bar --sort path src",
	"-efoo -ebar -n ctx.txt README.md",
	"-- -foo words.txt",
	"-e -foo words.txt",
	"^foo ctx.txt",
	"^$ words.txt",
	"-n ^ docs/guide.md",
	"-c ^ --sort path docs",
	"[[:upper:]]+ README.md",
	"\\bfoo\\b --sort path src",
	"fo{2} -n --sort path src",
	"(foo|bar)baz? --sort path -o",
	"foo|bar --sort path -n",
	"-c a|b --sort path src",
	"[xz] --sort path src",
	"-w foo|bar --sort path",
	"-o Foo|FOO|upper --sort path",
	"-v foo|bar ctx.txt",
	"-i foo|kind --sort path",
	"-i -c string|über --sort path",
	"-i -o FOO|bar --sort path src",
	"-i -w foo|kind --sort path",
	"ü --sort path",
	"-i über --sort path",
	"foo --sort path . ",
	"foo --sort path ./src",
	"foo --sort path src/",
	"foo --sort path docs/linkdir",
	"-in foo README.md",
	"-i kind docs/fold.txt",
	"-i string docs/fold.txt",
	"-i -c kind --sort path",
	"-i -w kind docs/fold.txt",
	"-S Kind docs/fold.txt",
	"-i func --sort path src",
	"-i -v kind docs/fold.txt",
	"--max-count=1 --context=1 foo ctx.txt",
	"--glob=*.md foo --sort=path",
	"-A 1 -B 0 foo ctx.txt",
	"--column foo --sort path src",
	"--column -o foo words.txt",
	"-N --column foo ctx.txt",
	"--column -v foo ctx.txt",
	"-A1 -o foo ctx.txt",
	"--vimgrep -A1 foo ctx.txt",
	"--files-without-match -c foo --sort path",
	"-l -c foo --sort path",
	"--heading -c foo --sort path",
	"-v -c foo --sort path src",
	"foo src/nested/deep --sort path",
	"foo src/nested --sort path",
	"foo lib --sort path",
	"-b foo trim.txt",
	"-n -b --column foo trim.txt",
	"-o -b foo trim.txt",
	"--trim foo trim.txt",
	"--trim -C1 zzz trim.txt",
	"-b -C1 zzz trim.txt",
	"-c --include-zero zzz src --sort path",
	"-f pats.lst trim.txt",
	"-f pats.lst -e zzz trim.txt",
	"-p foo src --sort path",
	"--no-ignore-vcs foo --sort path",
	"--no-ignore-vcs --files --sort path",
	"--no-config foo trim.txt",
	"--files --sortr path",
	"-n foo --sortr path src",
	"-M 100 foo docs/long.txt",
	"-M 100 -n -C1 foo --sort path docs",
	"--max-columns-preview -M 10 foo docs/long.txt",
	"--color always -M 100 foo docs/long.txt",
	"-M 3 -v zzz ctx.txt",
	"foo --sort path src docs",
	"foo --sort path docs src",
	"foo --sort path docs/a",
	"foo --sort path ./docs",
	"--files --sort path lib/build docs",
	// -r/--replace: whole lines rewritten, -o, columns and offsets
	// counted in the rewritten line, -M measuring it, groups by number
	// and name, context lines of -v rewritten, --json unaffected.
	"-r X foo --sort path",
	"--replace=[$0] -o -b --column foo words.txt",
	"-r X --column -b foo words.txt",
	"-r $1-${1}x$1x$$$ (fo)o words.txt",
	"-r <${n}> f(?P<n>o+) words.txt",
	"-r Y -v -C1 foo ctx.txt",
	"-r Y -M 12 foo words.txt",
	"-r Y --trim foo trim.txt",
	"-r <$1> -w f(o+) words.txt",
	"-M 10 --max-columns-preview -r XXXXXX foo words.txt",
	"--color always -r [$0] foo --sort path src",
	"--vimgrep -r X foo words.txt",
	"--json -r X foo ctx.txt",
	"-c -r X foo --sort path",
	// Where ripgrep finds each match (colours, --column, -o, --vimgrep),
	// -M says how many there were; adjoining matches are one coloured
	// run; --vimgrep -b gives each match's offset; -N holds with --vimgrep.
	"-M 10 --column foo words.txt",
	"-M 10 --vimgrep foo words.txt",
	"-M 10 -v -C1 --column notfoo words.txt",
	"-M 10 --max-columns-preview --column foo words.txt",
	"-M 10 --max-columns-preview --color always foo words.txt",
	"-M 2 -o foo words.txt",
	"-M 2 -C1 -v --column foo words.txt",
	"--trim -M 5 --column foo trim.txt",
	"-b --vimgrep foo words.txt",
	"--vimgrep -N --color always foo words.txt",
	"--color always -e fo -e ofo words.txt",
	"--trim -o \\s+foo trim.txt",
	"-o -v -C1 --column notfoo words.txt",
	"--count-matches -A2 $ --sort path docs",
	"--json x* docs/nonl.txt",
	"--color always -p foo.bar --sort path",
	// Command-line forms as ripgrep's parser (clap 2) takes them.
	"-m=1 foo ctx.txt",
	"-e=foo ctx.txt",
	"-m x foo ctx.txt",
	"-m 18446744073709551616 foo ctx.txt",
	"-m +2 foo ctx.txt",
	"-j x foo ctx.txt",
	"--color=bogus foo ctx.txt",
	"--sortr=x foo ctx.txt",
	"--json -c -l foo ctx.txt",
	"--json --files",
	"--json --vimgrep foo ctx.txt",
	"-i -in foo ctx.txt",
	"-n -nH foo ctx.txt",
	"-u -uu foo ctx.txt",
	"-A2 -C1 -B1 ^d ctx.txt",
	"-C1 -A2 ^d ctx.txt",
	"-B2 -C1 ^d ctx.txt",
	"-A1 -C2 -n ^foo docs/crlf.txt",
	"-t nosuch foo",
	"--type-list",
	// A matching line in the after-context of the last match -m allows
	// is printed as a match; a named file's bytes are counted up to where
	// -m stopped its search.
	"-m 2 -A 2 -w foo|bar src --sort path",
	"-m1 -A3 foo ctx.txt",
	"-m2 -A5 -n foo ctx.txt",
	"-m1 -A3 -v foo ctx.txt",
	"--color always -m1 -A3 --column foo ctx.txt",
	"--json -m1 -A10 foo ctx.txt",
	"--json -m1 foo ctx.txt",
	"--json -m1 foo bin/late.bin",
	// -l and --files-without-match: the last one given wins; -q silences
	// --json's summary too.
	"--files-without-match -l foo --sort path src",
	"-l --files-without-match foo --sort path src",
	"-q --json foo ctx.txt",
}

var elapsedRE = regexp.MustCompile(`"(elapsed|elapsed_total)":\{[^}]*\}`)

func TestCompareWithRipgrep(t *testing.T) {
	real := realRG(t)
	ours := testexe.Link(t, "rg")
	dir, home := corpus(t)
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "BUZZBOX_SHIM_PASSTHROUGH=0"}
	run := func(t *testing.T, exe string, args []string) (string, string, int) {
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		cmd.Env = env
		return testexe.Run(t, cmd)
	}
	for _, c := range compareCases {
		args := strings.Fields(c)
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			wantOut, wantErr, wantCode := run(t, real, args)
			gotOut, gotErr, gotCode := run(t, ours, args)
			ordered := strings.Contains(c, "--sort") || oneFile(args)
			if strings.Contains(c, "--json") {
				wantOut = elapsedRE.ReplaceAllString(wantOut, `"$1":{}`)
				gotOut = elapsedRE.ReplaceAllString(gotOut, `"$1":{}`)
			}
			if !ordered {
				wantOut, gotOut = sortLines(wantOut), sortLines(gotOut)
				wantErr, gotErr = sortLines(wantErr), sortLines(gotErr)
			}
			if gotOut != wantOut || gotCode != wantCode || gotErr != wantErr {
				t.Errorf("rg %s:\n--- ripgrep (exit %d) ---\n%s%s--- ours (exit %d) ---\n%s%s",
					c, wantCode, clip(wantOut), clip(wantErr), gotCode, clip(gotOut), clip(gotErr))
			}
		})
	}
}

// oneFile reports whether args search exactly one named file, the only
// case besides --sort where ripgrep's output order is fixed.
func oneFile(args []string) bool {
	n := 0
	for _, a := range args {
		if strings.HasSuffix(a, ".txt") || strings.HasSuffix(a, ".md") || strings.HasSuffix(a, ".go") || strings.HasSuffix(a, ".bin") {
			n++
		}
	}
	return n == 1
}

// compareExact runs real ripgrep and ours with each case's arguments in
// dir and fails on any difference in stdout, stderr or exit code. home is
// $HOME (a fresh directory when empty); stdin, when not empty, names a
// file both read as standard input. Output is compared as it is, so each
// case must fix the order (one file, --sort path or -j1); --json elapsed
// times are blanked.
func compareExact(t *testing.T, dir, home, stdin string, cases []string) {
	t.Helper()
	argvs := make([][]string, len(cases))
	for i, c := range cases {
		argvs[i] = strings.Fields(c)
	}
	compareRuns(t, dir, home, stdin, cases, argvs)
}

// compareArgv is compareExact for argument lists that strings.Fields
// would split wrongly: patterns with spaces or newlines, empty ones.
func compareArgv(t *testing.T, dir string, cases [][]string) {
	t.Helper()
	names := make([]string, len(cases))
	for i, args := range cases {
		names[i] = fmt.Sprintf("%q", args)
	}
	compareRuns(t, dir, "", "", names, cases)
}

// compareRuns runs real ripgrep and ours with each argument list, in dir
// with HOME=home (a fresh one when empty) and stdin from the file stdin
// (none when empty), and wants stdout, stderr and exit codes identical
// (--json's elapsed times aside). names name the subtests.
func compareRuns(t *testing.T, dir, home, stdin string, names []string, cases [][]string) {
	t.Helper()
	real := realRG(t)
	ours := testexe.Link(t, "rg")
	if home == "" {
		home = t.TempDir()
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "BUZZBOX_SHIM_PASSTHROUGH=0"}
	run := func(t *testing.T, exe string, args []string) (string, string, int) {
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		cmd.Env = env
		if stdin != "" {
			f, err := os.Open(stdin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.Stdin = f
		}
		return testexe.Run(t, cmd)
	}
	for i, args := range cases {
		name := names[i]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wantOut, wantErr, wantCode := run(t, real, args)
			gotOut, gotErr, gotCode := run(t, ours, args)
			wantOut = elapsedRE.ReplaceAllString(wantOut, `"$1":{}`)
			gotOut = elapsedRE.ReplaceAllString(gotOut, `"$1":{}`)
			if gotOut != wantOut || gotCode != wantCode || gotErr != wantErr {
				t.Errorf("rg %s: exit %d, want %d; stderr %q, want %q; stdout %s",
					name, gotCode, wantCode, clip(gotErr), clip(wantErr), firstDiff(gotOut, wantOut))
			}
		})
	}
}

// firstDiff describes where got first differs from want, line by line,
// with a few lines of each from there.
func firstDiff(got, want string) string {
	if got == want {
		return "same"
	}
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	show := func(l []string) string {
		l = l[min(i, len(l)):]
		l = l[:min(4, len(l))]
		for k := range l {
			if len(l[k]) > 200 {
				l[k] = l[k][:200] + "…\n"
			}
		}
		return strings.Join(l, "")
	}
	return fmt.Sprintf("differs at line %d (%d lines, want %d):\n--- ours ---\n%s--- ripgrep ---\n%s", i+1, len(g), len(w), show(g), show(w))
}

func sortLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "")
}

func clip(s string) string {
	const max = 3000
	if len(s) > max {
		return s[:max] + "…(clipped)\n"
	}
	return s
}

// terminalCases run with stdout on a terminal (through script(1)), where
// ripgrep switches on headings, line numbers and colours.
var terminalCases = []string{
	"foo --sort path src docs",
	"-C1 foo ctx.txt",
	"-c foo --sort path src",
	"-l foo --sort path src",
	"--no-heading -i foo --sort path src",
	"--color never foo --sort path src",
	"-o fo+ --sort path src",
	"-p foo --sort path src",
}

func TestCompareOnTerminal(t *testing.T) {
	real := realRG(t)
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("SKIP(loud): script(1) is not installed (apt-get install -y bsdutils); terminal output not compared")
	}
	ours := testexe.Link(t, "rg")
	dir, home := corpus(t)
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm", "LC_ALL=C", "BUZZBOX_SHIM_PASSTHROUGH=0"}
	run := func(exe, args string) string {
		cmd := exec.Command(script, "-qec", exe+" "+args, "/dev/null")
		cmd.Dir = dir
		cmd.Env = env
		out, _ := cmd.Output()
		return string(out)
	}
	for _, c := range terminalCases {
		t.Run(c, func(t *testing.T) {
			want, got := run(real, c), run(ours, c)
			if got != want {
				t.Errorf("rg %s on a terminal:\n--- ripgrep ---\n%q\n--- ours ---\n%q", c, want, got)
			}
		})
	}
}
