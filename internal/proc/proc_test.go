package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLookupEnvLastWins(t *testing.T) {
	e := Env{Environ: []string{"A=1", "B=", "A=2", "NOEQUALS"}}
	if v, ok := e.LookupEnv("A"); v != "2" || !ok {
		t.Errorf("LookupEnv(A) = %q, %v; want 2, true", v, ok)
	}
	if v, ok := e.LookupEnv("B"); v != "" || !ok {
		t.Errorf("LookupEnv(B) = %q, %v; want \"\", true", v, ok)
	}
	if _, ok := e.LookupEnv("NOEQUALS"); ok {
		t.Error("LookupEnv(NOEQUALS) found an entry without '='")
	}
	if v := e.Getenv("C"); v != "" {
		t.Errorf("Getenv(C) = %q; want empty", v)
	}
}

func TestWithEnvAndWithout(t *testing.T) {
	in := []string{"PATH=/bin", "KEY=secret", "PATH=/usr/bin", "X=1"}
	got := WithEnv(in, "PATH", "/shim:/bin")
	want := []string{"KEY=secret", "X=1", "PATH=/shim:/bin"}
	if !slices.Equal(got, want) {
		t.Errorf("WithEnv = %q; want %q", got, want)
	}
	if got := Without(in, "KEY", "X"); !slices.Equal(got, []string{"PATH=/bin", "PATH=/usr/bin"}) {
		t.Errorf("Without = %q", got)
	}
	if in[1] != "KEY=secret" {
		t.Error("Without modified its input")
	}
}

func TestNilStreams(t *testing.T) {
	var e Env
	if _, err := e.Out().Write([]byte("x")); err != nil {
		t.Error(err)
	}
	if _, err := e.Err().Write([]byte("x")); err != nil {
		t.Error(err)
	}
	if n, _ := e.In().Read(make([]byte, 1)); n != 0 {
		t.Error("nil Stdin read data")
	}
}

func TestTempDirOrder(t *testing.T) {
	good := t.TempDir()
	e := Env{Environ: []string{"TMPDIR=" + good}, Dir: "/nonexistent"}
	if got, err := e.TempDir(); got != good || err != nil {
		t.Errorf("TempDir with TMPDIR = %q, %v; want %q", got, err, good)
	}
	// TMPDIR pointing nowhere falls through to the next candidate.
	wd := t.TempDir()
	got, err := firstWritable([]place{{"$TMPDIR", filepath.Join(good, "missing")}, {"/tmp", ""}, {"working directory", wd}})
	if got != wd || err != nil {
		t.Errorf("firstWritable = %q, %v; want %q", got, err, wd)
	}
	entries, _ := os.ReadDir(wd)
	if len(entries) != 0 {
		t.Errorf("probe file left behind in %s: %v", wd, entries)
	}
}

func TestTempDirNoneWritable(t *testing.T) {
	_, err := firstWritable([]place{{"$TMPDIR", ""}, {"/tmp", "/nonexistent-buzzbox-tmp"}, {"working directory", "/nonexistent-buzzbox-wd"}})
	if err == nil {
		t.Fatal("firstWritable found a dir among missing ones")
	}
	msg := err.Error()
	for _, want := range []string{"$TMPDIR (unset)", "/nonexistent-buzzbox-tmp", "no such file or directory", "set TMPDIR"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}
