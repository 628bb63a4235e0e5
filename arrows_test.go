package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// arrowsDoc is the page that draws the arrows between identities, and
// arrowsHeading the heading whose first fenced block holds them.
const (
	arrowsDoc     = "docs/README.md"
	arrowsHeading = "### The arrows between identities"
)

// arrowHead is the glyph that ends an arrow's shaft in the drawing.
const arrowHead = "▶"

// composer is the one package that may import every identity: the
// drawing's "dispatch ──▶ every identity".
const composer = "dispatch"

// arrow is one line of the drawing: packages of identity from may depend
// on the package to (and its subpackages).
type arrow struct {
	from, to string
	line     int // in arrowsDoc
}

func (a arrow) String() string { return a.from + " ──▶ " + a.to }

// parseArrows reads the arrows block of a page: each line is
// "FROM ──▶ TO[, TO...]   why", the targets ending at the first run of two
// spaces or an opening parenthesis; "every identity" is the composer's.
// A line that is no arrow is an error, so the drawing stays checkable.
func parseArrows(page string) ([]arrow, error) {
	sc := bufio.NewScanner(strings.NewReader(page))
	n, state := 0, 0 // state 0: before the heading, 1: before the block, 2: in it
	var out []arrow
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case state == 0:
			if strings.TrimSpace(line) == arrowsHeading {
				state = 1
			}
			continue
		case state == 1:
			if strings.HasPrefix(line, "#") {
				return nil, fmt.Errorf("%s: no ``` block under %q", arrowsDoc, arrowsHeading)
			}
			if strings.HasPrefix(line, "```") {
				state = 2
			}
			continue
		case strings.HasPrefix(line, "```"):
			return out, nil
		case strings.TrimSpace(line) == "":
			continue
		}
		left, right, ok := strings.Cut(line, arrowHead)
		from := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(left), "─-"))
		if !ok || from == "" || strings.ContainsAny(from, " ") {
			return nil, fmt.Errorf("%s:%d: %q is no arrow: write FROM ──▶ TO   why", arrowsDoc, n, line)
		}
		right = strings.TrimSpace(right)
		if end := strings.Index(right, "  "); end >= 0 {
			right = right[:end]
		}
		if end := strings.Index(right, "("); end >= 0 {
			right = right[:end]
		}
		if strings.TrimSpace(right) == "every identity" {
			if from != composer {
				return nil, fmt.Errorf("%s:%d: only %s may import every identity", arrowsDoc, n, composer)
			}
			continue
		}
		for _, to := range strings.Split(right, ",") {
			to = strings.TrimSpace(to)
			if to == "" || strings.ContainsAny(to, " ") {
				return nil, fmt.Errorf("%s:%d: %q is no package path", arrowsDoc, n, to)
			}
			out = append(out, arrow{from: from, to: to, line: n})
		}
	}
	if state != 2 {
		return nil, fmt.Errorf("%s: no arrows block under %q", arrowsDoc, arrowsHeading)
	}
	return nil, fmt.Errorf("%s: the arrows block never ends", arrowsDoc)
}

// docArrows reads the drawing from arrowsDoc.
func docArrows(t *testing.T) []arrow {
	t.Helper()
	page, err := os.ReadFile(arrowsDoc)
	if err != nil {
		t.Fatal(err)
	}
	arrows, err := parseArrows(string(page))
	if err != nil {
		t.Fatal(err)
	}
	return arrows
}

// under reports whether package path p (relative to the module) is pkg or
// one of its subpackages.
// buzzboxPackages runs go list over the tree and returns each package
// (module-relative, "" for the root) with the buzzbox packages of its
// list field (Imports, Deps), module-relative too.
func buzzboxPackages(t *testing.T, field string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join ."+field+" \",\"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, list, _ := strings.Cut(line, "|")
		if pkg == "buzzbox" {
			pkg = ""
		}
		pkg = strings.TrimPrefix(pkg, "buzzbox/")
		pkgs[pkg] = []string{}
		for _, d := range strings.Split(list, ",") {
			if rel, ok := strings.CutPrefix(d, "buzzbox/"); ok {
				pkgs[pkg] = append(pkgs[pkg], rel)
			}
		}
	}
	return pkgs
}

func under(p, pkg string) bool { return p == pkg || strings.HasPrefix(p, pkg+"/") }

// TestArrowsMatchDocs is the check anyone can run that the package map's
// drawing is the code's: `go list -deps` of every identity's packages
// shows which other identities' packages each depends on, and each such
// dependency must follow an arrow of docs/README.md (directly, or through
// the package an arrow leads to), while each arrow drawn must be one the
// code has. allowedArrows, which TestImportRules applies to direct
// imports, holds exactly the arrows drawn.
func TestArrowsMatchDocs(t *testing.T) {
	arrows := docArrows(t)
	deps := buzzboxPackages(t, "Deps") // package → its buzzbox dependencies
	// depsOf is the union of the dependencies of pkg and its subpackages
	// that belong to identity unit (all of them when unit is "").
	depsOf := func(pkg, unit string) map[string]bool {
		set := map[string]bool{}
		for p, ds := range deps {
			if !under(p, pkg) || unit != "" && identityOf("buzzbox/"+p) != unit {
				continue
			}
			set[p] = true
			for _, d := range ds {
				set[d] = true
			}
		}
		return set
	}
	for _, from := range identityRoots {
		reach := map[string]bool{} // what the drawn arrows of from let it depend on
		for _, a := range arrows {
			if a.from == from {
				for d := range depsOf(a.to, "") {
					reach[d] = true
				}
			}
		}
		have := depsOf(from, from)
		var extra []string
		for d := range have {
			if to := identityOf("buzzbox/" + d); to != "" && to != from && !reach[d] {
				extra = append(extra, d)
			}
		}
		slices.Sort(extra)
		for _, d := range extra {
			t.Errorf("%s depends on %s, but %s draws no arrow %s ──▶ %s: draw it there (and in allowedArrows) if it is designed, else remove the dependency", from, d, arrowsDoc, from, d)
		}
		for _, a := range arrows {
			if a.from != from {
				continue
			}
			used := false
			for d := range have {
				used = used || under(d, a.to)
			}
			if !used {
				t.Errorf("%s:%d draws %s, but no package of %s depends on %s: remove the arrow", arrowsDoc, a.line, a, from, a.to)
			}
		}
	}
	for _, a := range arrows {
		switch to := identityOf("buzzbox/" + a.to); {
		case !slices.Contains(identityRoots, a.from):
			t.Errorf("%s:%d draws %s from %s, which is no identity (identityRoots)", arrowsDoc, a.line, a, a.from)
		case to == "":
			t.Errorf("%s:%d draws %s to %s, which belongs to no identity: only arrows between identities are drawn", arrowsDoc, a.line, a, a.to)
		case to == a.from:
			t.Errorf("%s:%d draws %s inside one identity: only arrows between identities are drawn", arrowsDoc, a.line, a)
		}
	}
	// allowedArrows and the drawing hold the same arrows.
	for from, targets := range allowedArrows {
		for _, to := range targets {
			rel, f := strings.TrimPrefix(to, "buzzbox/"), strings.TrimPrefix(from, "buzzbox/")
			if !slices.ContainsFunc(arrows, func(a arrow) bool { return a.from == f && a.to == rel }) {
				t.Errorf("allowedArrows lets %s import %s, which %s does not draw", f, rel, arrowsDoc)
			}
		}
	}
	for _, a := range arrows {
		if !slices.Contains(allowedArrows["buzzbox/"+a.from], "buzzbox/"+a.to) {
			t.Errorf("%s:%d draws %s, which allowedArrows lacks", arrowsDoc, a.line, a)
		}
	}
}

// TestArrowsParser: the drawing's parser reads the block's lines and
// refuses what it cannot read, so TestArrowsMatchDocs cannot pass by
// reading nothing.
func TestArrowsParser(t *testing.T) {
	page := "# x\n\n" + arrowsHeading + "\n\ntext\n\n```\n" +
		" dispatch ──▶ every identity (the composition root)\n\n" +
		" devmcp ──────▶ shimtools/shim   the session shim\n" +
		" relay ───▶ a/b, c/d   (why)\n" +
		"```\n"
	got, err := parseArrows(page)
	want := []string{"devmcp ──▶ shimtools/shim", "relay ──▶ a/b", "relay ──▶ c/d"}
	var gotS []string
	for _, a := range got {
		gotS = append(gotS, a.String())
	}
	if err != nil || !slices.Equal(gotS, want) {
		t.Errorf("parseArrows = %q, %v; want %q", gotS, err, want)
	}
	for _, bad := range []string{
		"# x\n",
		arrowsHeading + "\n```\n devmcp shimtools/shim\n```\n",
		arrowsHeading + "\n```\n relay ──▶ every identity\n```\n",
		arrowsHeading + "\n```\n devmcp ──▶ shimtools/shim\n",
		arrowsHeading + "\n### next\n",
	} {
		if got, err := parseArrows(bad); err == nil {
			t.Errorf("parseArrows(%q) = %v; want an error", bad, got)
		}
	}
	if len(docArrows(t)) == 0 {
		t.Errorf("%s draws no arrows; devmcp ──▶ shimtools/shim at least is designed", arrowsDoc)
	}
}
