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

// chunkedCopy copies src to dir/name in 32 KiB writes, as tar, curl or a
// container runtime unpacking a layer writes a file.
func chunkedCopy(b *testing.B, src, dir, name string) string {
	b.Helper()
	const chunk = 32 << 10
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		b.Fatal(err)
	}
	for len(data) > 0 {
		n := min(chunk, len(data))
		if _, err := f.Write(data[:n]); err != nil {
			b.Fatal(err)
		}
		data = data[n:]
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// installed lays copies of buzzbox (by `buzzbox install --copy`) and of the
// hello-world in a fresh directory, and returns the directory.
//
// A copy is what a machine runs: a binary downloaded, unpacked from a
// container layer or installed is written with write(2), which fills the
// page cache with large folios. The linker's output is written through a
// memory mapping a page at a time, and mapping those small folios makes
// every start-up slower (by about a fifth for buzzbox and a few percent
// for the hello-world here), so the as-linked figures exaggerate the
// ratio. Files written in smaller
// pieces (chunkedCopy) fall between the two.
func installed(b *testing.B, hello string) string {
	b.Helper()
	dir := b.TempDir()
	if _, stderr, code := testexe.Run(b, exec.Command(testexe.Path(b), "install", "--copy", dir)); code != 0 {
		b.Fatalf("buzzbox install --copy: exit %d\n%s", code, stderr)
	}
	data, err := os.ReadFile(hello)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello"), data, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkStartup measures whole-process start-up: fork, exec, runtime and
// package initialisation, dispatch, one line of output, exit. Each
// iteration runs the static hello-world and then the identity, so both see
// the same machine load; ns/op is the identity's mean, and "x-hello" its
// ratio to the hello-world run next to it (the goal is ≤ 2). "installed"
// runs copies as `buzzbox install --copy` leaves them, "copied-32k" copies
// written in 32 KiB pieces, "as-linked" the linker's output through a
// symlink (see installed).
//
//	go test -run=NONE -bench=Startup -benchtime=300x ./dispatch
func BenchmarkStartup(b *testing.B) {
	hello := helloWorld(b)
	dir := installed(b, hello)
	chunked := b.TempDir()
	chunkedHello := chunkedCopy(b, hello, chunked, "hello")
	chunkedExe := chunkedCopy(b, testexe.Path(b), chunked, "buzzbox")
	for _, name := range []string{"rg", "tree"} {
		if err := os.Symlink(chunkedExe, filepath.Join(chunked, name)); err != nil {
			b.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		hello string
		argv  []string
	}{
		{"rg--version/installed", filepath.Join(dir, "hello"), []string{filepath.Join(dir, "rg"), "--version"}},
		{"tree--version/installed", filepath.Join(dir, "hello"), []string{filepath.Join(dir, "tree"), "--version"}},
		{"rg--version/copied-32k", chunkedHello, []string{filepath.Join(chunked, "rg"), "--version"}},
		{"tree--version/copied-32k", chunkedHello, []string{filepath.Join(chunked, "tree"), "--version"}},
		{"rg--version/as-linked", hello, []string{testexe.Link(b, "rg"), "--version"}},
		{"tree--version/as-linked", hello, []string{testexe.Link(b, "tree"), "--version"}},
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
				base += run([]string{c.hello})
				ident += run(c.argv)
				n++
			}
			b.ReportMetric(float64(ident.Nanoseconds())/float64(n), "ns/op")
			b.ReportMetric(float64(base.Nanoseconds())/float64(n), "hello-ns/op")
			b.ReportMetric(float64(ident)/float64(base), "x-hello")
		})
	}
}
