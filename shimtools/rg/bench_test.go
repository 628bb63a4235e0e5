package rg

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/proc"
)

// benchRoot is the tree the benchmarks search: $BUZZBOX_BENCH_ROOT, else
// GOROOT/src (about 150 MB of real source).
func benchRoot(b *testing.B) string {
	if r := os.Getenv("BUZZBOX_BENCH_ROOT"); r != "" {
		return r
	}
	r := filepath.Join(goroot(), "src")
	if _, err := os.Stat(r); err != nil {
		b.Skipf("SKIP(loud): %s missing; set BUZZBOX_BENCH_ROOT to a source tree", r)
	}
	return r
}

func benchRun(b *testing.B, args ...string) {
	root := benchRoot(b)
	env := proc.Env{Stdout: io.Discard, Stderr: io.Discard, Dir: root, Environ: []string{"HOME=" + b.TempDir()}}
	b.ReportAllocs()
	for b.Loop() {
		if code := Run(context.Background(), args, env); code > 1 {
			b.Fatalf("rg %v exited %d", args, code)
		}
	}
}

// BenchmarkLiteral searches for a literal, the most common agent query.
func BenchmarkLiteral(b *testing.B) { benchRun(b, "-n", "func main") }

// BenchmarkRegexLiteral searches for a regex with a required literal.
func BenchmarkRegexLiteral(b *testing.B) { benchRun(b, "-n", `err\s*!=\s*nil\s*\{\s*return`) }

// BenchmarkCaseInsensitive searches case-insensitively.
func BenchmarkCaseInsensitive(b *testing.B) { benchRun(b, "-n", "-i", "func main") }

// BenchmarkFixedCaseInsensitive searches for a literal case-insensitively
// (-F -i), whose letters include 's', which also folds to LONG S.
func BenchmarkFixedCaseInsensitive(b *testing.B) { benchRun(b, "-F", "-i", "servehttp") }

// BenchmarkCaseInsensitiveWord searches for a whole word case-insensitively.
func BenchmarkCaseInsensitiveWord(b *testing.B) { benchRun(b, "-i", "-w", "context") }

// BenchmarkFiles lists the files a search would read.
func BenchmarkFiles(b *testing.B) { benchRun(b, "--files") }

// goroot asks the go tool where its sources are ("" when it is absent).
func goroot() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
