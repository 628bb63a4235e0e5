package dispatch

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"buzzbox/internal/testexe"
)

// helloWorld builds a static Go program that prints one line: the floor
// against which the start-up of the synchronous identities is measured.
func helloWorld(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	src := "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	exe := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-o", exe, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build hello: %v\n%s", err, out)
	}
	return exe
}

// BenchmarkStartup measures whole-process start-up: fork, exec, runtime and
// package initialisation, dispatch, one line of output, exit. Each
// iteration runs the static hello-world and then the identity, so both see
// the same machine load; ns/op is the identity's mean, and "x-hello" its
// ratio to the hello-world run next to it (the goal is ≤ 2).
//
//	go test -run=NONE -bench=Startup -benchtime=300x ./dispatch
func BenchmarkStartup(b *testing.B) {
	hello := helloWorld(b)
	cases := []struct {
		name string
		argv []string
	}{
		{"rg--version", []string{testexe.Link(b, "rg"), "--version"}},
		{"tree--version", []string{testexe.Link(b, "tree"), "--version"}},
	}
	run := func(argv []string) time.Duration {
		start := time.Now()
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var base, ident time.Duration
			n := 0
			for b.Loop() {
				base += run([]string{hello})
				ident += run(c.argv)
				n++
			}
			b.ReportMetric(float64(ident.Nanoseconds())/float64(n), "ns/op")
			b.ReportMetric(float64(base.Nanoseconds())/float64(n), "hello-ns/op")
			b.ReportMetric(float64(ident)/float64(base), "x-hello")
		})
	}
}
