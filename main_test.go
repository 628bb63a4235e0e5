package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
)

// forbiddenAtInit are calls that do work while packages initialise, which
// every identity would pay for since one executable links them all.
var forbiddenAtInit = map[string]string{
	"regexp.MustCompile": "compile lazily with sync.OnceValue",
	"regexp.Compile":     "compile lazily with sync.OnceValue",
	"os.Getenv":          "read the environment from proc.Env in Main",
	"os.LookupEnv":       "read the environment from proc.Env in Main",
	"os.ReadFile":        "read files in Main, not at init",
	"os.Open":            "open files in Main, not at init",
	"template.Must":      "parse templates lazily",
}

// initAllowed are the files whose func init is their purpose.
var initAllowed = map[string]string{
	"internal/prefault/prefault_linux.go": "maps start-up pages in bulk before other packages initialise",
}

// TestNoWorkAtInit rejects init functions and package-level variables whose
// initialisers call any of forbiddenAtInit, in every non-test file.
func TestNoWorkAtInit(t *testing.T) {
	root := testexe.ModuleRoot()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if _, ok := initAllowed[filepath.ToSlash(rel)]; ok {
					continue
				}
				if d.Name.Name == "init" && d.Recv == nil {
					t.Errorf("%s: func init: do the work in Main or lazily (STYLE.md 2.11)", fset.Position(d.Pos()).String()[len(root)+1:])
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				ast.Inspect(d, func(n ast.Node) bool {
					if _, ok := n.(*ast.FuncLit); ok {
						return false // runs when called, not at init
					}
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					pkg, ok := sel.X.(*ast.Ident)
					if !ok {
						return true
					}
					if fix, bad := forbiddenAtInit[pkg.Name+"."+sel.Sel.Name]; bad {
						t.Errorf("%s:%d: package-level %s.%s: %s", rel, fset.Position(call.Pos()).Line, pkg.Name, sel.Sel.Name, fix)
					}
					return true
				})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// initBudget bounds what one of our own packages may allocate while
// initialising: sentinel errors and sync.OnceValue wrappers cost a few
// allocations (the largest today: 408 bytes, 6 allocations); a table
// built at init is what it is there to catch.
const (
	initBudgetBytes  = 2 << 10
	initBudgetAllocs = 16
)

var initLine = regexp.MustCompile(`^init (\S+) @[\d.]+ ms, [\d.]+ ms clock, (\d+) bytes, (\d+) allocs`)

// TestInitCost runs `rg --version` with GODEBUG=inittrace=1 and holds each
// buzzbox package's initialisation to a small budget.
func TestInitCost(t *testing.T) {
	cmd := exec.Command(testexe.Link(t, "rg"), "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rg --version: %v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		m := initLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		seen++
		if m[1] != "buzzbox" && !strings.HasPrefix(m[1], "buzzbox/") {
			continue
		}
		bytes, _ := strconv.Atoi(m[2])
		allocs, _ := strconv.Atoi(m[3])
		if bytes > initBudgetBytes || allocs > initBudgetAllocs {
			t.Errorf("%s allocates %d bytes in %d allocs at init; budget %d bytes, %d allocs", m[1], bytes, allocs, initBudgetBytes, initBudgetAllocs)
		}
	}
	if seen == 0 {
		t.Fatalf("no inittrace lines in output:\n%s", out)
	}
}

// maxBinaryBytes is the size goal for the executable with every identity in.
const maxBinaryBytes = 30 << 20

// TestBuildScript runs scripts/build.sh, the README's build, and checks what
// it leaves: one executable under the asked name, stamped with VERSION,
// within the size goal, and no temporary files beside it.
func TestBuildScript(t *testing.T) {
	if testing.Short() {
		t.Skip("links a release build")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "buzzbox")
	cmd := exec.Command("bash", filepath.Join(testexe.ModuleRoot(), "scripts", "build.sh"), out)
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-buildtest")
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/build.sh: %v\n%s", err, msg)
	}
	if !strings.Contains(string(msg), "bytes") {
		t.Errorf("scripts/build.sh did not print the size:\n%s", msg)
	}
	info, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > maxBinaryBytes {
		t.Errorf("binary is %d bytes; goal ≤ %d", info.Size(), maxBinaryBytes)
	}
	if info.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", info.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("build left %v, want only buzzbox", names)
	}
	version, err := exec.Command(out, "--version").Output()
	if err != nil {
		t.Fatalf("buzzbox --version: %v", err)
	}
	if got := strings.TrimSpace(string(version)); got != "buzzbox v0.0.0-buildtest" {
		t.Errorf("--version = %q, want the stamped version", got)
	}
}
