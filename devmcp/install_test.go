package devmcp_test

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// goModuleProxy lays out a file:// Go module proxy (the GOPROXY protocol:
// @v/list, .info, .mod, .zip) holding one module, example.com/greet
// v1.0.0, and returns its directory.
func goModuleProxy(t *testing.T) string {
	t.Helper()
	const mod, ver = "example.com/greet", "v1.0.0"
	root := t.TempDir()
	dir := filepath.Join(root, mod, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod := "module " + mod + "\n\ngo 1.21\n"
	files := map[string]string{
		"list":        ver + "\n",
		ver + ".info": `{"Version":"` + ver + `","Time":"2026-01-01T00:00:00Z"}`,
		ver + ".mod":  gomod,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(dir, ver+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range map[string]string{
		"go.mod":   gomod,
		"greet.go": "package greet\n\n// Hello greets.\nfunc Hello() string { return \"hello from a module\" }\n",
	} {
		w, err := zw.Create(mod + "@" + ver + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestSandboxInstallsPackages: what worked before the sandbox still works
// under it: a command installs a Go module into the module cache (a write
// root of its own, here GOMODCACHE) from a module proxy, then builds (the
// build cache under XDG_CACHE_HOME, another write root) and runs a program
// in the working tree that uses it. The proxy is a local directory, so the
// test needs no network.
func TestSandboxInstallsPackages(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("SKIP(loud): no go command to install a module with")
	}
	proxy := goModuleProxy(t)
	cache, xdgCache := t.TempDir(), t.TempDir()
	dir := t.TempDir()
	p := startSandboxed(t, startOpts{dir: dir, env: []string{"GOMODCACHE=" + cache, "XDG_CACHE_HOME=" + xdgCache, "GOCACHE=",
		"GOPROXY=file://" + proxy, "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}})
	out := runShell(t, p, map[string]any{"command": `set -e
cat > go.mod <<'MOD'
module example.com/app

go 1.21
MOD
cat > main.go <<'SRC'
package main

import (
	"fmt"

	"example.com/greet"
)

func main() { fmt.Println(greet.Hello()) }
SRC
go get example.com/greet@v1.0.0
go run .`, "timeout_ms": 300000})
	if out.Stdout != "hello from a module\n" || out.ExitCode != 0 {
		t.Fatalf("install and build under the sandbox = %+v", out)
	}
	if _, err := os.Stat(filepath.Join(cache, "example.com", "greet@v1.0.0", "greet.go")); err != nil {
		t.Errorf("the module is not in the module cache: %v", err)
	}
}
