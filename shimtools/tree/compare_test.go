package tree_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
)

func realTree(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tree")
	if err != nil {
		t.Skip("SKIP(loud): GNU tree is not installed; apt-get install -y tree (Debian's is 2.1.0) to compare our tree with it")
	}
	out, _ := exec.Command(p, "--version").Output()
	if !bytes.HasPrefix(out, []byte("tree v2.1")) {
		t.Skipf("SKIP(loud): %s is not GNU tree 2.1 (%q); the comparison pins tree 2.1 output", p, strings.TrimSpace(string(out)))
	}
	return p
}

func mk(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func treeCorpus(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "root")
	mk(t, dir, map[string]string{
		"Zed":              "",
		"a/f1.txt":         "hi\n",
		"a/b/f2.go":        "package b\n",
		"a/b/c/big.bin":    strings.Repeat("0", 2000),
		"d/\u00fc.txt":     "x\n",
		".h/h":             "y\n",
		".gitignore":       "*.go\nignored_dir/\n",
		"ignored_dir/x":    "",
		"e/empty/":         "",
		"e/mid":            strings.Repeat("m", 200000),
		"sp ace":           "",
		"b\\slash":         "",
		"q'uote":           "",
		"tab\there":        "",
		"nl\nx":            "",
		"st*r":             "",
		"g/.gitignore":     "x.txt\nsub/\n",
		"g/x.txt":          "",
		"g/y.txt":          "",
		"g/sub/z":          "",
		"g/deeper/n/o/p/q": "",
		"k.md":             "",
		"M.md":             "",
		"_under":           "",
		"10":               "",
		"9":                "",
		// tree's own .gitignore reading: negation from any file in force,
		// anchors joined to the directory's path, escapes dropped.
		"gi/.gitignore":      "# comment\n*.log\n!keep.log\n/top.txt\nbuild/\none/*.tmp\n\\#hash\ntrailing\\ \n",
		"gi/a.log":           "",
		"gi/keep.log":        "",
		"gi/top.txt":         "",
		"gi/#hash":           "",
		"gi/trailing ":       "",
		"gi/build/out/x":     "",
		"gi/keep/y.log":      "",
		"gi/one/.gitignore":  "!b.log\ntwo/\n*.txt\n",
		"gi/one/top.txt":     "",
		"gi/one/a.tmp":       "",
		"gi/one/b.log":       "",
		"gi/one/two/a.tmp":   "",
		"gi/one/sub/build/z": "",
		"M.md.x":             "",
		".git/info/exclude":  "Zed\n/k.md\n",
	})
	must(t, os.Chmod(filepath.Join(dir, "a/f1.txt"), 0o755))
	must(t, os.Symlink("a/f1.txt", filepath.Join(dir, "link")))
	must(t, os.Symlink("d", filepath.Join(dir, "dlink")))
	must(t, os.Symlink("nowhere", filepath.Join(dir, "dang")))
	must(t, os.Symlink("../a", filepath.Join(dir, "g/up")))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var treeCases = []string{
	"",
	"-a",
	"-d",
	"-f",
	"-i",
	"-l",
	"-L 1",
	"-L 2",
	"-dL 1",
	"-a -L 1",
	"-I *.txt",
	"-I a|d",
	"-P *.txt",
	"-P *.txt --prune",
	"-P *.go -a -d",
	"-I *.md --prune",
	"--prune",
	"--noreport",
	"--dirsfirst",
	"--dirsfirst -a",
	"-F",
	"-F -l",
	"-s",
	"-h",
	"-sh",
	"-s -h -F",
	"--gitignore",
	"--gitignore -a",
	"--gitignore g",
	"--charset utf-8",
	"--charset=UTF-8 -L 2",
	"--charset ascii",
	"a d",
	"a nope",
	"nope",
	"a/f1.txt",
	"-F a/f1.txt e",
	"-f a",
	"-f -i a",
	"e",
	"-h e",
	"-s e",
	"-- a",
	"-L 0",
	"-L",
	"./",
	"a/",
	"-a -f -F -L 2 --dirsfirst",
	"-d -f",
	"-i -f --noreport",
	"-dF",
	"-d --prune",
	"-I *",
	"-P *.{txt,go}",
	"e/empty",
	"-d d",
	"-a -P .* -L 1",
	// Roots are listed as lstat(2) sees them: a link keeps its own size
	// and shows '@' with -F; a link to nothing or to a file is a file
	// tree could not open, not an error.
	"-s dlink",
	"-F dlink",
	"-h g/up",
	"dang",
	"-F link dang",
	"-sF a/f1.txt",
	"-l -F dlink",
	// -F with -d marks everything but directories.
	"-dF",
	"-dF dlink g/up a",
	// tree's own matcher: '^' negates a class, '!' does not; an empty
	// alternative or an unclosed class matches everything; bytes, not
	// characters, so '?' is not one 2-byte UTF-8 character.
	"-P [!a]*",
	"-P [^a]*",
	"-P x*|",
	"-I |",
	"-I x*|",
	"-P *[",
	"-I ? d",
	"-I ?? d",
	"-P \\*",
	// A trailing '\' matches nothing: tree reads on past the pattern.
	"-P *\\",
	"-I a\\",
	"-I Zed\\|a",
	"-P *.MD",
	"--ignore-case -P *.MD",
	"--ignore-case -I A|D",
	"-P k*|Z*",
	"-P */*",
	// -L reads its value as strtoul(s, NULL, 0) and keeps an int.
	"-L 0x2",
	"-L 010",
	"-L 08",
	"-L 1a",
	"-L +2",
	"-L 4294967297",
	"-L 2147483649",
	"-L -4294967295",
	// --charset takes "=value" or the next argument, after any suffix.
	"--charset",
	"--charset=",
	"--charsetX ascii",
	// Every charset tree 2.1 draws lines for.
	"--charset ISO-8859-1 a",
	"--charset=hebrew a",
	"--charset=shift_jis a",
	"--charset EUC-JP a",
	"--charset csEUCKR a",
	"--charset ISO-2022-JP a",
	"--charset cp437 a",
	"--charset IBM850 a",
	"--charset GB2312 a",
	"--charset Big5 a",
	"--charset KOI8-R a",
	"--charset windows-1251 a",
	"--charset ANSI a",
	// .gitignore as tree reads it.
	"--gitignore gi",
	"--gitignore -a gi",
	"--gitignore gi/one",
	"--gitignore -f gi",
	"--gitignore ./",
	"--gitignore -f ./",
	"--gitignore g ./",
	"--gitignore --prune -P *.tmp",
	"--gitignore -l g",
	// --matchdirs lists all entries of a directory whose path below the
	// root matches -P, keeps it under --prune, and reads the tree first.
	"--matchdirs -P a",
	"--matchdirs -P g*",
	"--matchdirs -P a/b",
	"--matchdirs -P e --prune",
	"--matchdirs -P b -l -L 2",
	"--matchdirs -P *.txt -l",
	// Reading the tree first, tree joins "./" and a name with a '/'
	// more, which anchored .gitignore lines see.
	"--gitignore --matchdirs ./",
	"--gitignore --prune ./",
}

// TestTreeIssueGitignoreLeak: with --prune or --matchdirs, tree returns
// early from a directory that lists nothing, and its .gitignore stays in
// force for every directory read after it, in directory order, and for
// later roots.
func TestTreeIssueGitignoreLeak(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "leak")
	files := map[string]string{
		"c/.gitignore": "*.txt\n*.log\n",
		"e/.gitignore": "*.log\n",
		"e/zz.txt":     "",
	}
	for _, d := range []string{"a", "b", "c", "d", "e", "f", "g/h"} {
		files[d+"/k.txt"] = ""
		files[d+"/m.log"] = ""
	}
	mk(t, dir, files)
	var cases []string
	for _, f := range []string{"--gitignore --prune", "--gitignore --matchdirs", "--gitignore --matchdirs -P k*", "--gitignore --prune -l", "--gitignore"} {
		cases = append(cases, f, f+" c .", f+" e g", f+" -L 1")
	}
	compareWithGNUTree(t, dir, cases, true)
}

func TestCompareWithGNUTree(t *testing.T) {
	compareWithGNUTree(t, treeCorpus(t), treeCases, false)
}

// TestTreeIssueGitignoreLines: .gitignore lines as tree 2.1 reads them:
// only the newline is cut (a '\r' stays part of the pattern), an empty
// line is no pattern, "**" spans directories, classes and '?' match
// bytes, and a negation anywhere wins over a match anywhere.
func TestTreeIssueGitignoreLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gi")
	files := map[string]string{
		".gitignore":          "**/foo\nsub/*.txt\n!src/foo\n*.[ch]\n!abc.c\n\\!bang\n \\ lead\ntrail  \nx?\n/anch/\ndir/\n#x\n\\#notcomment\n*.TXT\r\n\n",
		"a/.gitignore":        "!*.c\n**/b\n",
		"sub/deep/.gitignore": "*\n!q.txt\n",
		"lib/.gitignore":      "l*\n/t.o\n",
	}
	for _, f := range []string{"foo/bar/f.c", "foo/g.h", "a/x/b/k", "a/b/l", "dir/sub/m.txt", "dir/n", "anch/in/o",
		"sub/p.txt", "sub/deep/q.txt", "src/foo/r.c", "src/s.h", "lib/t.o", "lib/l1", "!bang", " lead", "trail", "x1",
		"xy", "abc.c", "bcd.h", "#notcomment", "Z.TXT", "Z.TXT\r", "\r", "\n"} {
		files[f] = ""
	}
	mk(t, dir, files)
	var cases []string
	for _, f := range []string{"", " -a", " --ignore-case", " -f", " --prune", " -l", " -d"} {
		cases = append(cases, "--gitignore"+f, "--gitignore"+f+" ./", "--gitignore"+f+" a sub")
	}
	compareWithGNUTree(t, dir, cases, true)
}

// TestTreeIssueTreeCharset: tree draws lines for $TREE_CHARSET when
// --charset is not given.
func TestTreeIssueTreeCharset(t *testing.T) {
	compareWithGNUTree(t, treeCorpus(t), []string{"a", "--charset ascii a", "--charset=latin1 a"}, false, "TREE_CHARSET=utf8")
}

// TestTreeIssueGitDirExclude: tree reads $GIT_DIR/info/exclude, and only
// then, through its own path, so its name patterns hide entries under
// every root and its anchored ones none.
func TestTreeIssueGitDirExclude(t *testing.T) {
	compareWithGNUTree(t, treeCorpus(t), []string{"--gitignore", "--gitignore . gi", "--gitignore -a", "-a"}, false, "GIT_DIR=.git")
}

// compareWithGNUTree runs GNU tree and ours in dir with each case's
// arguments (and extraEnv) and wants identical stdout, stderr and exit
// code.
func compareWithGNUTree(t *testing.T, dir string, cases []string, parallel bool, extraEnv ...string) {
	t.Helper()
	real := realTree(t)
	ours := testexe.Link(t, "tree")
	env := append([]string{"LC_ALL=C", "PATH=" + os.Getenv("PATH"), "BUZZBOX_SHIM_PASSTHROUGH=0"}, extraEnv...)
	run := func(t *testing.T, exe string, args []string) (string, string, int) {
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		cmd.Env = env
		return testexe.Run(t, cmd)
	}
	for _, c := range cases {
		args := strings.Fields(c)
		t.Run(c, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			wantOut, wantErr, wantCode := run(t, real, args)
			gotOut, gotErr, gotCode := run(t, ours, args)
			if gotOut != wantOut || gotCode != wantCode || gotErr != wantErr {
				t.Errorf("tree %s:\n--- GNU tree (exit %d) ---\n%s%s--- ours (exit %d) ---\n%s%s", c, wantCode, wantOut, wantErr, gotCode, gotOut, gotErr)
			}
		})
	}
}

// TestTreeIssueLongPath: tree leaves out an entry whose path, as it builds
// it, reaches PATH_MAX, since lstat(2) of it fails; it is not a directory
// it could not open.
func TestTreeIssueLongPath(t *testing.T) {
	const (
		nameLen = 200 // bytes, under NAME_MAX
		depth   = 22  // levels, enough to pass PATH_MAX (4096) below "./"
	)
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	// os.Root walks the path one directory at a time, so the whole path
	// may pass PATH_MAX where os.MkdirAll would fail.
	p := ""
	for i := range depth {
		p += fmt.Sprintf("%s%02d", strings.Repeat("d", nameLen-2), i)
		must(t, root.Mkdir(p, 0o755))
		must(t, root.WriteFile(p+"/f", nil, 0o644))
		p += "/"
	}
	compareWithGNUTree(t, dir, []string{"", "-f", "-s", "-F", "-d", "--prune", "-i --noreport"}, true)
}
