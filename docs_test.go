package main

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
)

// specDir holds the behaviour specs the code cites.
const specDir = "docs/spec"

// minCitations is a floor on the section citations the scan must find; far
// fewer means the scanner stopped seeing them and the check passes vacuously.
const minCitations = 100

// citeLookback is how far before a section sign the scan looks for the name
// of the document cited ("devmcp.md", "spec", "RFC 6455"), so that a list
// like "(RFC 6455 §5.5.1, §7.4.1)" or a citation broken across comment
// lines keeps its document.
const citeLookback = 60

// packageSpec names the spec a bare citation refers to, by the directory of
// the citing file; the longest matching prefix wins.
var packageSpec = map[string]string{
	"harness/":           "harness.md",
	"cli/":               "nostrgit-cli.md",
	"nostrgit/":          "nostrgit-cli.md",
	"internal/nostrkey/": "nostrgit-cli.md",
	"devmcp/":            "devmcp.md",
	"shimtools/":         "devmcp.md",
	"agent/":             "agent.md",
	"internal/acp/":      "protocols.md",
	"internal/jsonrpc/":  "protocols.md",
}

// namedSpec maps a document named in front of a section sign to its file
// under specDir; "" means a document outside it (an RFC, STYLE.md), which
// the check skips.
var namedSpec = map[string]string{
	"agent.md":        "agent.md",
	"devmcp.md":       "devmcp.md",
	"harness.md":      "harness.md",
	"nostrgit-cli.md": "nostrgit-cli.md",
	"protocols.md":    "protocols.md",
	"agent spec":      "agent.md",
	"devmcp spec":     "devmcp.md",
	"harness spec":    "harness.md",
	"nostrgit spec":   "nostrgit-cli.md",
	"protocols spec":  "protocols.md",
	"spec":            "", // the citing package's own spec, see packageSpec
	"RFC":             "-",
	"JSON-RPC 2.0":    "-",
	"STYLE":           "-",
	"DESIGN":          "-",
}

// citation is one section of one spec, cited at pos.
type citation struct {
	pos     string // file:line
	spec    string // file name under specDir
	section string // "4.6"
}

// scanner holds the patterns citations and headings are read with.
type scanner struct {
	sectionSign, citeName, headingNum *regexp.Regexp
}

func newScanner() *scanner {
	return &scanner{
		sectionSign: regexp.MustCompile(`§\s*(\d+(?:\.\d+)*)(?:\s*[–-]\s*(\d+(?:\.\d+)*))?`),
		citeName:    regexp.MustCompile(`\b(?:(?:agent|devmcp|harness|nostrgit|protocols) spec|(?:agent|devmcp|harness|nostrgit-cli|protocols)\.md|RFC|JSON-RPC 2\.0|STYLE|DESIGN|spec)\b`),
		headingNum:  regexp.MustCompile(`^#{1,6}\s+(\d+(?:\.\d+)*)\.?(?:\s|$)`),
	}
}

// citationsIn returns the spec citations in text, a comment whose first
// line is line of file rel. Citations of documents outside specDir, and
// bare ones in a package with no spec, come back with spec "-" and "",
// respectively.
func (sc *scanner) citationsIn(rel string, line int, text string) []citation {
	var out []citation
	for _, m := range sc.sectionSign.FindAllStringSubmatchIndex(text, -1) {
		from := max(0, m[0]-citeLookback)
		spec := ""
		if names := sc.citeName.FindAllString(text[from:m[0]], -1); len(names) > 0 {
			spec = namedSpec[names[len(names)-1]]
		}
		if spec == "" {
			best := ""
			for prefix, s := range packageSpec {
				if strings.HasPrefix(rel, prefix) && len(prefix) > len(best) {
					best, spec = prefix, s
				}
			}
		}
		pos := fmt.Sprintf("%s:%d", rel, line+strings.Count(text[:m[0]], "\n"))
		out = append(out, citation{pos, spec, text[m[2]:m[3]]})
		if m[4] >= 0 {
			out = append(out, citation{pos, spec, text[m[4]:m[5]]})
		}
	}
	return out
}

// codeCitations scans the comments of every Go file of the module.
func (sc *scanner) codeCitations(t *testing.T, root string) []citation {
	t.Helper()
	var out []citation
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == "third_party" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel == "docs_test.go" {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			var b strings.Builder
			for i, c := range g.List {
				if i > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(c.Text)
			}
			out = append(out, sc.citationsIn(rel, fset.Position(g.Pos()).Line, b.String())...)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan Go files: %v", err)
	}
	return out
}

// specSections reads the numbered headings of one spec file.
func (sc *scanner) specSections(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sections := map[string]bool{}
	fenced := false
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if m := sc.headingNum.FindStringSubmatch(line); m != nil && !fenced {
			sections[m[1]] = true
		}
	}
	return sections, lines.Err()
}

// TestSpecCitationsExist fails when a comment cites a section ("spec §4.6",
// "devmcp.md §12.3") that has no heading in docs/spec, so the specs and the
// code stay in step: renumber a spec and the stale citations show up here.
func TestSpecCitationsExist(t *testing.T) {
	root := testexe.ModuleRoot()
	sc := newScanner()
	specs := map[string]map[string]bool{}
	entries, err := os.ReadDir(filepath.Join(root, specDir))
	if err != nil {
		t.Fatalf("read %s: %v", specDir, err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		s, err := sc.specSections(filepath.Join(root, specDir, e.Name()))
		if err != nil {
			t.Fatalf("read %s/%s: %v", specDir, e.Name(), err)
		}
		specs[e.Name()] = s
	}
	cites := sc.codeCitations(t, root)
	checked := 0
	for _, c := range cites {
		switch {
		case c.spec == "-":
			continue
		case c.spec == "":
			t.Errorf("%s: §%s cites no spec this package has; name the file (devmcp.md §%s)", c.pos, c.section, c.section)
		case specs[c.spec] == nil:
			t.Errorf("%s: §%s cites %s, which is not in %s", c.pos, c.section, c.spec, specDir)
		case !specs[c.spec][c.section]:
			t.Errorf("%s: §%s is not a section of %s/%s; fix the citation or the spec's heading", c.pos, c.section, specDir, c.spec)
		default:
			checked++
		}
	}
	if checked < minCitations {
		t.Errorf("checked %d citations, want at least %d: the scan no longer sees them", checked, minCitations)
	}
}

// TestSpecCitationScanner pins how citations are read: the document named
// in front wins, a bare one takes the package's spec, ranges check both
// ends, and documents outside docs/spec are skipped.
func TestSpecCitationScanner(t *testing.T) {
	sign := "\u00a7"
	text := "spec " + sign + "4.5–4.6 and " + sign + "7\n" +
		"(RFC 6455 " + sign + "5.5.1, " + sign + "7.4.1)\n" +
		"devmcp.md " + sign + "12.3, steps 2–8 of " + sign + "6.\n" +
		"(STYLE\n" + sign + "2.1)"
	sc := newScanner()
	got := sc.citationsIn("harness/x.go", 10, text)
	want := []citation{
		{"harness/x.go:10", "harness.md", "4.5"},
		{"harness/x.go:10", "harness.md", "4.6"},
		{"harness/x.go:10", "harness.md", "7"},
		{"harness/x.go:11", "-", "5.5.1"},
		{"harness/x.go:11", "-", "7.4.1"},
		{"harness/x.go:12", "devmcp.md", "12.3"},
		{"harness/x.go:12", "devmcp.md", "6"},
		{"harness/x.go:14", "-", "2.1"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("citationsIn:\n got %v\nwant %v", got, want)
	}
	if got := sc.citationsIn("relay/x.go", 1, sign+"3"); len(got) != 1 || got[0].spec != "" {
		t.Errorf("bare citation outside a package with a spec: got %v, want spec \"\"", got)
	}
}
