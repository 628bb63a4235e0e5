package dispatch

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

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
// package initialisation, dispatch, one line of output, exit.
//
//	go test -run=NONE -bench=Startup -benchtime=300x ./dispatch
func BenchmarkStartup(b *testing.B) {
	hello := helloWorld(b)
	cases := []struct {
		name string
		argv []string
	}{
		{"hello-world", []string{hello}},
		{"rg--version", []string{testexe.Link(b, "rg"), "--version"}},
		{"tree--version", []string{testexe.Link(b, "tree"), "--version"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := exec.Command(c.argv[0], c.argv[1:]...).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
