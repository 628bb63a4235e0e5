package tree

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/proc"
)

func TestUnsupportedFlag(t *testing.T) {
	for flag, near := range map[string]string{
		"-J": "-f", "--dirfirst": "--dirsfirst", "--prun": "--prune", "--noreport=x": "--noreport",
		"-D": "-s", "--du": "-s", "--si": "-h", "--sort=size": "--dirsfirst", "-v": "--dirsfirst",
		"--filesfirst": "--dirsfirst", "-C": "--charset", "--filelimit=3": "-L", "--gitfile=x": "--gitignore",
		"-a-": "-a", "--x": "-",
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{flag}, proc.Env{Stdout: &out, Stderr: &errb})
		msg := errb.String()
		if code != 2 || out.Len() != 0 || strings.Count(msg, "\n") != 1 ||
			!strings.Contains(msg, "unsupported flag "+flag) || !strings.Contains(msg, "nearest supported flag: "+near) {
			t.Errorf("tree %s = exit %d, stdout %q, stderr %q; want exit 2 and a one-line hint naming %s", flag, code, out.String(), msg, near)
		}
	}
}

func TestInProcess(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"b/c.txt", "a.txt", ".hidden"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if code := Run(context.Background(), nil, proc.Env{Stdout: &out, Dir: dir}); code != 0 {
		t.Fatalf("tree = exit %d", code)
	}
	want := ".\n|-- a.txt\n`-- b\n    `-- c.txt\n\n2 directories, 2 files\n"
	if out.String() != want {
		t.Errorf("tree =\n%s\nwant\n%s", out.String(), want)
	}
}

func TestSizeField(t *testing.T) {
	for _, tt := range []struct {
		size  int64
		human bool
		want  string
	}{
		{0, true, "    0"}, {1023, true, " 1023"}, {4096, true, " 4.0K"}, {200000, true, " 195K"},
		{5000000, true, " 4.8M"}, {4096, false, "        4096"},
	} {
		if got := sizeField(tt.size, tt.human); got != tt.want {
			t.Errorf("sizeField(%d, %v) = %q; want %q", tt.size, tt.human, got, tt.want)
		}
	}
}

// FuzzParseArgs feeds arbitrary argument vectors to the parser.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{"-L\x002", "-P\x00*.go|*.rs\x00--prune", "--charset=utf-8", "-dL", "--\x00-a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parseArgs(strings.Split(s, "\x00"))
	})
}

// BenchmarkTree lists GOROOT/src (or $BUZZBOX_BENCH_ROOT), as
// scripts/bench-rg.sh compares with GNU tree.
func BenchmarkTree(b *testing.B) {
	root := os.Getenv("BUZZBOX_BENCH_ROOT")
	if root == "" {
		root = filepath.Join(goroot(), "src")
	}
	if _, err := os.Stat(root); err != nil {
		b.Skipf("SKIP(loud): %s missing; set BUZZBOX_BENCH_ROOT", root)
	}
	env := proc.Env{Stdout: io.Discard, Stderr: io.Discard, Dir: root}
	b.ReportAllocs()
	for b.Loop() {
		if code := Run(context.Background(), nil, env); code != 0 {
			b.Fatalf("tree exited %d", code)
		}
	}
}

// goroot asks the go tool where its sources are ("" when it is absent).
func goroot() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func FuzzPatternMatch(f *testing.F) {
	for _, s := range []string{"*.txt", "[^a]*", "a|", "|", "**/x", "a/**/b", "[a-", "[a-\\", "x\\", "x/", "*[", "[]]"} {
		f.Add(s, "a/b.txt", false)
	}
	f.Fuzz(func(t *testing.T, pat, name string, isdir bool) {
		m := &matcher{fold: len(name)%2 == 0}
		got := m.match(name, pat, isdir)
		if got != patMismatch && got != patMatched && got != patBad {
			t.Fatalf("match(%q, %q) = %d; want -1, 0 or 1", name, pat, got)
		}
		if pat != "" && !strings.ContainsAny(pat, "*?[\\|/") {
			if got := m.match(pat, pat, isdir); got != patMatched {
				t.Errorf("match(%q, %q) = %d; want 1 for a plain pattern against itself", pat, pat, got)
			}
		}
	})
}
