package workspace

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Where each part of the vocabulary lives, relative to the module root.
const (
	homeDir  = "internal/workspace"
	nip98Dir = "internal/workspace/nip98"
	nipoaDir = "internal/workspace/nipoa"
)

// requiredEnv are env names the workspace must define (the ones seven
// files used to spell on their own).
var requiredEnv = []string{
	"BUZZ_RELAY_URL", "BUZZ_PRIVATE_KEY", "BUZZ_AUTH_TAG", "NOSTR_PRIVATE_KEY",
	"NOSTR_PRIVATE_KEY_FILE", "BUZZ_CLI", "BUZZ_KEYFILE", "BUZZ_ACP_DISPLAY_NAME",
}

// minSourceFiles is a floor on the module's non-test sources the scan must
// read; far fewer means it lost its way and would pass vacuously.
const minSourceFiles = 150

// nip98KindValue is NIP-98's kind, which nip98.Kind defines.
const nip98KindValue = 27235

// minNamedKind is the least kind number a constant named …Kind (not
// kind…) is taken to define; below it such names are offsets and lengths.
const minNamedKind = 1000

// minTags is a floor on the tag names the scan must find in this package.
const minTags = 10

// minKinds is a floor on the kinds the scan must find in this package.
const minKinds = 40

// source is one parsed non-test Go file of the module.
type source struct {
	rel  string // slash path from the module root
	dir  string // slash directory from the module root
	file *ast.File
}

// moduleSources parses every non-test Go file of the module, outside
// third_party and testdata.
func moduleSources(t *testing.T, fset *token.FileSet) []source {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	var out []source
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "third_party" || name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		out = append(out, source{rel: rel, dir: filepath.ToSlash(filepath.Dir(rel)), file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < minSourceFiles {
		t.Fatalf("read %d Go files of the module, want at least %d", len(out), minSourceFiles)
	}
	return out
}

// vocabulary is what this package defines: kind values, env names, tag
// and header names.
type vocabulary struct {
	kinds   map[int]string    // value → constant name
	env     map[string]string // env name → constant name
	tags    map[string]string // tag name → constant name
	headers map[string]string // lowercased header name → constant name
}

func readVocabulary(t *testing.T, srcs []source) vocabulary {
	t.Helper()
	v := vocabulary{kinds: map[int]string{}, env: map[string]string{}, tags: map[string]string{}, headers: map[string]string{}}
	for _, s := range srcs {
		if s.dir != homeDir {
			continue
		}
		for _, decl := range s.file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						continue
					}
					switch {
					case strings.HasPrefix(name.Name, "Kind") && lit.Kind == token.INT:
						n, _ := strconv.Atoi(lit.Value)
						if prev, dup := v.kinds[n]; dup {
							t.Errorf("kind %d is named twice here: %s and %s", n, prev, name.Name)
						}
						v.kinds[n] = name.Name
					case strings.HasPrefix(name.Name, "Env") && lit.Kind == token.STRING:
						val, _ := strconv.Unquote(lit.Value)
						v.env[val] = name.Name
					case strings.HasPrefix(name.Name, "Tag") && lit.Kind == token.STRING:
						val, _ := strconv.Unquote(lit.Value)
						v.tags[val] = name.Name
					case strings.HasPrefix(name.Name, "Header") && lit.Kind == token.STRING:
						val, _ := strconv.Unquote(lit.Value)
						v.headers[strings.ToLower(val)] = name.Name
					}
				}
			}
		}
	}
	if len(v.tags) < minTags || len(v.headers) == 0 {
		t.Fatalf("found %d tag and %d header names in %s, want at least %d and 1", len(v.tags), len(v.headers), homeDir, minTags)
	}
	if len(v.kinds) < minKinds {
		t.Fatalf("found %d kinds in %s, want at least %d", len(v.kinds), homeDir, minKinds)
	}
	for _, e := range requiredEnv {
		if v.env[e] == "" {
			t.Errorf("%s defines no constant for %s", homeDir, e)
		}
	}
	return v
}

// envName reports whether s is spelled like a workspace env name, alone or
// with the "=" of an environment entry.
func envName(s string) (string, bool) {
	s = strings.TrimSuffix(s, "=")
	if !strings.HasPrefix(s, "BUZZ_") && !strings.HasPrefix(s, "NOSTR_") {
		return "", false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return "", false
		}
	}
	return s, true
}

func intLit(e ast.Expr) (int, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return 0, false
	}
	n, err := strconv.ParseInt(lit.Value, 0, 64)
	return int(n), err == nil
}

func strLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// isKindExpr reports whether e reads an event's kind: x.Kind or x.Kinds[i].
func isKindExpr(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "Kind"
	case *ast.IndexExpr:
		sel, ok := x.X.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Kinds"
	}
	return false
}

// isNostrType reports whether e is go-nostr's type name.
func isNostrType(e ast.Expr, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "nostr"
}

// isTagName reports whether e is the name of a tag: t[0], tag[0],
// authTag[0] or ev.Tags[i][0] (an argument list's args[0] is not).
func isTagName(e ast.Expr) bool {
	ix, ok := e.(*ast.IndexExpr)
	if !ok {
		return false
	}
	if n, ok := intLit(ix.Index); !ok || n != 0 {
		return false
	}
	switch base := ix.X.(type) {
	case *ast.Ident:
		return base.Name == "t" || strings.Contains(strings.ToLower(base.Name), "tag")
	case *ast.IndexExpr:
		sel, ok := base.X.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Tags"
	}
	return false
}

// TestVocabularyHasOneHome reads the module's non-test sources and fails
// where a workspace kind, an env name, a channel metadata tag or header
// name (where a tag or header is built or read), or NIP-98/NIP-OA token code is
// defined or spelled outside its one home: kinds, env names and NIP-AE
// addressing here, NIP-98 in nip98, NIP-OA in nipoa.
func TestVocabularyHasOneHome(t *testing.T) {
	fset := token.NewFileSet()
	srcs := moduleSources(t, fset)
	v := readVocabulary(t, srcs)
	for _, p := range strays(fset, srcs, v) {
		t.Error(p)
	}
}

// strays lists, sorted, each place in srcs that defines or spells out
// what v says lives in this package (or in nip98 and nipoa).
func strays(fset *token.FileSet, srcs []source, v vocabulary) []string {
	var problems []string
	report := func(n ast.Node, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
	}
	envSpelled := map[string][]ast.Node{}
	kindName := func(n int) string {
		if name := v.kinds[n]; name != "" {
			return "workspace." + name
		}
		return "a constant in " + homeDir + "/kinds.go"
	}
	for _, s := range srcs {
		// Only this package's own files are the home of kinds and names;
		// its subpackages (nip98, nipoa, the relay client) use them like
		// everyone else.
		inHome := s.dir == homeDir
		inNIP98, inNIPOA := s.dir == nip98Dir, s.dir == nipoaDir
		ast.Inspect(s.file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.ValueSpec:
				for i, name := range x.Names {
					if i >= len(x.Values) {
						continue
					}
					val, ok := intLit(x.Values[i])
					lower := strings.ToLower(name.Name)
					// kindX = N, or fooKind = N where N is a workspace kind
					// (small numbers are offsets and lengths of a kind field).
					named := strings.HasPrefix(lower, "kind") || strings.Contains(lower, "kind") && val >= minNamedKind && v.kinds[val] != ""
					nip98Kind := s.dir == nip98Dir && val == nip98KindValue
					if ok && !inHome && named && !nip98Kind {
						report(x, "constant %s = %d defines an event kind; use %s", name.Name, val, kindName(val))
					}
				}
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "nostr" && strings.HasPrefix(x.Sel.Name, "Kind") && !inHome {
					report(x, "nostr.%s names a kind go-nostr's way; use the workspace constant", x.Sel.Name)
				}
			case *ast.KeyValueExpr:
				if inHome {
					break
				}
				name := ""
				switch key := x.Key.(type) {
				case *ast.Ident:
					name = key.Name
				case *ast.BasicLit: // a filter as a map: {"kinds": []int{…}}
					if s, ok := strLit(key); ok && s == "kinds" {
						name = "Kinds"
					}
				}
				switch name {
				case "Kind":
					if val, ok := intLit(x.Value); ok {
						report(x, "Kind: %d is a kind number; use %s", val, kindName(val))
					}
				case "Kinds":
					if cl, ok := x.Value.(*ast.CompositeLit); ok {
						for _, el := range cl.Elts {
							if val, ok := intLit(el); ok {
								report(el, "Kinds lists %d; use %s", val, kindName(val))
							}
						}
					}
				}
			case *ast.BinaryExpr:
				if x.Op != token.EQL && x.Op != token.NEQ {
					break
				}
				for _, pair := range [][2]ast.Expr{{x.X, x.Y}, {x.Y, x.X}} {
					if val, ok := intLit(pair[1]); ok && isKindExpr(pair[0]) && !inHome {
						report(x, "compares a kind with %d; use %s", val, kindName(val))
					}
					if s, ok := strLit(pair[1]); ok && s == "auth" && isTagName(pair[0]) && !inNIPOA {
						report(x, `compares a tag name with "auth"; NIP-OA's tag is nipoa.TagName`)
					}
					if s, ok := strLit(pair[1]); ok && v.tags[s] != "" && isTagName(pair[0]) && !inHome {
						report(x, "compares a tag name with %q; use workspace.%s", s, v.tags[s])
					}
				}
			case *ast.SwitchStmt:
				if x.Tag == nil || !isKindExpr(x.Tag) || inHome {
					break
				}
				for _, st := range x.Body.List {
					for _, e := range st.(*ast.CaseClause).List {
						if val, ok := intLit(e); ok {
							report(e, "case %d on a kind; use %s", val, kindName(val))
						}
					}
				}
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Find" && len(x.Args) == 1 && !inHome {
					if s, ok := strLit(x.Args[0]); ok && v.tags[s] != "" {
						report(x, "Find(%q) names a workspace tag; use workspace.%s", s, v.tags[s])
					}
				}
			case *ast.CompositeLit:
				if len(x.Elts) > 1 && !inNIPOA {
					if s, ok := strLit(x.Elts[0]); ok && s == "auth" {
						report(x, `builds an "auth" tag; NIP-OA's tag is nipoa's`)
					}
				}
				if inHome {
					break
				}
				var tags []*ast.CompositeLit
				switch {
				case isNostrType(x.Type, "Tag"):
					tags = append(tags, x)
				case isNostrType(x.Type, "Tags"):
					for _, el := range x.Elts {
						if cl, ok := el.(*ast.CompositeLit); ok {
							tags = append(tags, cl)
						}
					}
				}
				for _, tag := range tags {
					if len(tag.Elts) == 0 {
						continue
					}
					if s, ok := strLit(tag.Elts[0]); ok && v.tags[s] != "" {
						report(tag, "builds a %q tag; use workspace.%s", s, v.tags[s])
					}
				}
			case *ast.BasicLit:
				if val, ok := intLit(x); ok && val == nip98KindValue && !inNIP98 {
					report(x, "27235 is NIP-98's kind; use nip98.Kind")
				}
				str, ok := strLit(x)
				if !ok {
					break
				}
				switch {
				case (str == "Nostr" || str == "Nostr ") && !inNIP98:
					report(x, "%q is NIP-98's Authorization scheme; use nip98.Scheme or nip98.Header", str)
				case strings.HasPrefix(str, "nostr:agent-auth:") && !inNIPOA:
					report(x, "%q is NIP-OA's signed preimage; use nipoa", str)
				case v.headers[strings.ToLower(str)] != "" && s.dir != homeDir:
					report(x, "%q is spelled out; use workspace.%s", str, v.headers[strings.ToLower(str)])
				case str == memoryDomain && s.dir != homeDir:
					report(x, "%q is NIP-AE's address domain; use workspace.MemoryDTag", str)
				}
				if name, ok := envName(str); ok && s.dir != homeDir {
					envSpelled[name] = append(envSpelled[name], x)
				}
			}
			return true
		})
	}
	for name, nodes := range envSpelled {
		switch {
		case v.env[name] != "":
			for _, n := range nodes {
				report(n, "%s is spelled out; use workspace.%s", name, v.env[name])
			}
		case len(nodes) > 1:
			for _, n := range nodes {
				report(n, "%s is spelled in %d places; define it once, in %s/env.go", name, len(nodes), homeDir)
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// strayFile is one of each thing TestVocabularyHasOneHome must find, each
// on a line of its own, with the words its report must contain.
const strayFile = `package stray

const kindChat = 9                      // want "constant kindChat = 9"
const mediaKind = 24242                 // want "constant mediaKind = 24242"
const (
	envRelay = "BUZZ_RELAY_URL"         // want "BUZZ_RELAY_URL is spelled out"
	envOnce  = "BUZZ_NOT_SHARED"
	envTwice = "BUZZ_SPELLED_TWICE"     // want "spelled in 2 places"
	other    = "BUZZ_SPELLED_TWICE="    // want "spelled in 2 places"
)

func f(ev *nostr.Event, t nostr.Tag, args []string) {
	_ = nostr.KindReaction                                  // want "nostr.KindReaction"
	_ = nostr.Event{Kind: 7}                                 // want "Kind: 7"
	_ = nostr.Filter{Kinds: []int{39000}}                    // want "Kinds lists 39000"
	_ = filter{"kinds": []int{40002}}                        // want "Kinds lists 40002"
	_ = ev.Kind == 9                                         // want "compares a kind with 9"
	switch ev.Kind {
	case 44100:                                              // want "case 44100"
	}
	_ = t[0] == "auth"                                       // want "compares a tag name with \"auth\""
	_ = args[0] == "auth"
	_ = nostr.Tag{"auth", "x", "", "y"}                      // want "builds an \"auth\" tag"
	_ = 27235                                                // want "27235 is NIP-98's kind"
	_ = "Nostr "                                             // want "NIP-98's Authorization scheme"
	_ = "nostr:agent-auth:"                                  // want "NIP-OA's signed preimage"
	_ = "agent-memory/v1/d-tag"                              // want "NIP-AE's address domain"
	_ = "X-Auth-Tag"                                         // want "use workspace.HeaderAuthTag"
	_ = ev.Tags.Find("archived")                             // want "Find(\"archived\")"
	_ = nostr.Tags{{"h", "c"}, {"visibility", "open"}}       // want "builds a \"visibility\" tag"
	_ = t[0] == "channel_type"                               // want "compares a tag name with \"channel_type\""
	_ = map[string]string{"name": "not a tag"}
}
`

// TestVocabularyCheckFindsStrays runs the check on a file holding one of
// each stray and nothing else, so that a check which stopped seeing one
// kind of stray fails here instead of passing in silence.
func TestVocabularyCheckFindsStrays(t *testing.T) {
	fset := token.NewFileSet()
	srcs := moduleSources(t, fset)
	v := readVocabulary(t, srcs)
	f, err := parser.ParseFile(fset, "stray/stray.go", strayFile, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{} // line → words
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if w, ok := strings.CutPrefix(c.Text, "// want "); ok {
				words, err := strconv.Unquote(w)
				if err != nil {
					t.Fatalf("line %d: %v", fset.Position(c.Pos()).Line, err)
				}
				want[fset.Position(c.Pos()).Line] = words
			}
		}
	}
	got := map[int][]string{}
	for _, p := range strays(fset, []source{{rel: "stray/stray.go", dir: "stray", file: f}}, v) {
		// p is "stray/stray.go:LINE:COL: message"
		parts := strings.SplitN(p, ":", 4)
		line, _ := strconv.Atoi(parts[1])
		got[line] = append(got[line], p)
	}
	for line, words := range want {
		found := false
		for _, p := range got[line] {
			found = found || strings.Contains(p, words)
		}
		if !found {
			t.Errorf("line %d: no report containing %q; got %q", line, words, got[line])
		}
	}
	for line, ps := range got {
		if _, ok := want[line]; !ok {
			t.Errorf("line %d: unexpected %q", line, ps)
		}
	}
}
