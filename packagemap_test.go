package main

import (
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"buzzbox/dispatch"
)

// mapRow is one row of docs/README.md's package map.
type mapRow struct {
	line    int
	pkgs    []string // module-relative ("" for the root package)
	holds   string
	imports []string // nil when the cell is not a plain list (a row of several packages)
	plain   bool
}

// packageMap reads the table under "## Package map" in page.
func packageMap(t *testing.T, page string) []mapRow {
	t.Helper()
	var rows []mapRow
	in := false
	for i, l := range strings.Split(page, "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			in = l == "## Package map"
			continue
		case !in || !strings.HasPrefix(l, "| `"):
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), " | ")
		if len(cells) != 3 {
			t.Fatalf("%s:%d: a package map row of %d cells; want 3", arrowsDoc, i+1, len(cells))
		}
		r := mapRow{line: i + 1, holds: strings.TrimSpace(cells[1])}
		// "`shimtools/search`, `printer`, …": later names are siblings of
		// the first.
		parent := ""
		for j, name := range strings.Split(cells[0], ", ") {
			name, _, _ = strings.Cut(strings.TrimSpace(name), " ") // "`buzzbox` (main.go)"
			name = strings.Trim(name, "`")
			switch {
			case name == "buzzbox":
				name = ""
			case j == 0:
				if k := strings.LastIndexByte(name, '/'); k >= 0 {
					parent = name[:k+1]
				}
			default:
				name = parent + name
			}
			r.pkgs = append(r.pkgs, name)
		}
		imports := strings.TrimSpace(cells[2])
		switch {
		case len(r.pkgs) > 1:
		case imports == "—" || imports == "(standard library only)":
			r.plain = true
		default:
			r.plain = true
			for _, imp := range strings.Split(imports, ", ") {
				imp, _, _ = strings.Cut(imp, " (") // "internal/workspace (env names)"
				r.imports = append(r.imports, imp)
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no package map rows under \"## Package map\"", arrowsDoc)
	}
	return rows
}

// TestPackageMapMatchesTree: docs/README.md's package map has a row for
// every package of the tree (tests' helpers aside), each row's imports are
// the package's buzzbox imports, and every identity of dispatch's table
// lives in a package whose row names it: the table, the page and the
// folders agree.
func TestPackageMapMatchesTree(t *testing.T) {
	page, err := os.ReadFile(arrowsDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := packageMap(t, string(page))
	imports := buzzboxPackages(t, "Imports") // package → its buzzbox imports
	for p := range imports {
		if strings.HasPrefix(p, "third_party/") {
			delete(imports, p)
		}
	}
	rowOf := map[string]mapRow{}
	for _, r := range rows {
		for _, p := range r.pkgs {
			if _, ok := imports[p]; !ok {
				t.Errorf("%s:%d lists %q, which is no package of the tree", arrowsDoc, r.line, p)
			}
			rowOf[p] = r
		}
		if !r.plain || len(r.pkgs) != 1 {
			continue
		}
		if have, want := slices.Sorted(slices.Values(imports[r.pkgs[0]])), slices.Sorted(slices.Values(r.imports)); !slices.Equal(have, want) {
			t.Errorf("%s:%d: %q imports %v; the map says %v", arrowsDoc, r.line, r.pkgs[0], have, want)
		}
	}
	for p := range imports {
		if _, ok := rowOf[p]; !ok && !testHelper(p) {
			t.Errorf("package %q has no row in %s's package map", p, arrowsDoc)
		}
	}
	for _, id := range dispatch.Identities() {
		fn := runtime.FuncForPC(reflect.ValueOf(id.Main).Pointer()).Name() // buzzbox/cli.Main
		pkg := strings.TrimPrefix(fn[:strings.LastIndexByte(fn, '.')], "buzzbox/")
		r, ok := rowOf[pkg]
		switch {
		case !ok:
			t.Errorf("identity %s runs %s, whose package %q has no row in %s", id.Name, fn, pkg, arrowsDoc)
		case !strings.Contains(r.holds, "`"+id.Name+"`"):
			t.Errorf("%s:%d: the row of %q does not name the identity `%s` it holds (dispatch runs %s)", arrowsDoc, r.line, pkg, id.Name, fn)
		}
		if identityOf("buzzbox/"+pkg) == "" {
			t.Errorf("identity %s lives in %q, under none of identityRoots %v", id.Name, pkg, identityRoots)
		}
	}
}

// testHelper reports whether pkg is a helper only tests import (scripted
// peers and the like), which the map does not list.
func testHelper(pkg string) bool {
	return strings.HasSuffix(pkg, "test") && strings.Contains(pkg, "/")
}
