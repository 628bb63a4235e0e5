package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"
)

// specExample is one example of the CommonMark spec, as the
// commonmark-spec package extracts them.
type specExample struct {
	Markdown string `json:"markdown"`
	HTML     string `json:"html"`
	Section  string `json:"section"`
	Number   int    `json:"number"`
}

// mdOut is what testdata/markdown.mjs prints.
type mdOut struct {
	HTML []string  `json:"html"`
	MS   []float64 `json:"ms"`
}

// renderMarkdown runs static/js/markdown.js under node on docs (page:
// as the page renders, else as the spec writes HTML).
func renderMarkdown(t *testing.T, node string, docs []string, entities map[string]string, page bool) mdOut {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	in, _ := json.Marshal(map[string]any{"dir": dir, "docs": docs, "entities": entities, "page": page})
	cmd := exec.Command(node, filepath.Join("testdata", "markdown.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node markdown.mjs: %v\n%s", err, stderr.String())
	}
	var out mdOut
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("node markdown.mjs output: %v\n%s", err, b)
	}
	if len(out.HTML) != len(docs) {
		t.Fatalf("markdown.mjs rendered %d documents of %d", len(out.HTML), len(docs))
	}
	return out
}

// specAllowedFailures are the spec examples the page renders differently
// on purpose, by number, each with its reason. Everything else must match
// the spec's HTML exactly.
var specAllowedFailures = map[string][]int{
	// Raw HTML is never passed through: the page shows it as text.
	"raw HTML shown as text": append(seq(148, 191), // HTML blocks
		613, 614, 615, 616, 617, 623, 625, 626, 627, 628, 629, 630, 631, // Raw HTML
		21, 31, 201, 308, 309, 344, 475, 476, 477, 491, 494, 524, 536, 642, 643),
	// Only http, https, mailto and scheme-less links are followed; others
	// render as their text.
	"link scheme not allowed (irc:, a+b+c:, made-up-scheme:, localhost:)": {596, 598, 599, 601},
}

// seq is the numbers lo..hi.
func seq(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

// specPassFloor is the number of spec examples that must render exactly
// as the spec says: all but the allowed failures. It only goes up.
const specPassFloor = 576

// TestMarkdownCommonMarkSpec renders every example of the CommonMark spec
// (the commonmark-spec package, a test peer) with the page's own module
// and compares with the spec's HTML: every example passes but those in
// specAllowedFailures, and those render their raw HTML as text.
func TestMarkdownCommonMarkSpec(t *testing.T) {
	modules, node := testexe.NodeModules(t)
	specDir := filepath.Join(modules, "commonmark-spec")
	if _, err := os.Stat(filepath.Join(specDir, "spec.txt")); err != nil {
		t.Skipf("SKIP(loud): commonmark-spec missing (%v); run scripts/test.sh (npm install in scripts/node)", err)
	}
	js, err := exec.Command(node, "-e", `process.stdout.write(JSON.stringify(require(process.argv[1]).tests))`, specDir).Output()
	if err != nil {
		t.Fatalf("read the spec's examples: %v", err)
	}
	var examples []specExample
	if err := json.Unmarshal(js, &examples); err != nil || len(examples) < 600 {
		t.Fatalf("spec examples: %v (%d of them)", err, len(examples))
	}
	// Named entities the examples use, decoded by Go's table (the page
	// uses the browser's).
	entities := map[string]string{}
	reEntity := regexp.MustCompile(`&([A-Za-z][A-Za-z0-9]{1,31});`)
	var docs []string
	for i := range examples {
		examples[i].Markdown = strings.ReplaceAll(examples[i].Markdown, "→", "\t")
		examples[i].HTML = strings.ReplaceAll(examples[i].HTML, "→", "\t")
		docs = append(docs, examples[i].Markdown)
		for _, m := range reEntity.FindAllStringSubmatch(examples[i].Markdown, -1) {
			if s := html.UnescapeString(m[0]); s != m[0] {
				entities[m[1]] = s
			}
		}
	}
	out := renderMarkdown(t, node, docs, entities, false)
	allowed := map[int]string{}
	for why, nums := range specAllowedFailures {
		for _, n := range nums {
			allowed[n] = why
		}
	}
	pass := 0
	bySection := map[string][]int{}
	for i, ex := range examples {
		got := out.HTML[i]
		if got == ex.HTML {
			pass++
			if why, ok := allowed[ex.Number]; ok {
				t.Errorf("example %d (%s) now passes: take it out of specAllowedFailures (%s) and raise specPassFloor", ex.Number, ex.Section, why)
			}
			continue
		}
		why, ok := allowed[ex.Number]
		if !ok {
			t.Errorf("example %d (%s):\n%s\nwant %q\ngot  %q", ex.Number, ex.Section, ex.Markdown, ex.HTML, got)
			continue
		}
		bySection[ex.Section] = append(bySection[ex.Section], ex.Number)
		if strings.HasPrefix(why, "raw HTML") && regexp.MustCompile(`<(?:script|div|img|iframe|table|del|a href="[^"]*\*)`).MatchString(got) {
			t.Errorf("example %d: raw HTML reached the output as markup: %q", ex.Number, got)
		}
	}
	var sections []string
	for s, n := range bySection {
		sections = append(sections, fmt.Sprintf("%s %v", s, n))
	}
	slices.Sort(sections)
	t.Logf("%d of %d spec examples pass; rendered differently on purpose: %s", pass, len(examples), strings.Join(sections, "; "))
	if pass < specPassFloor {
		t.Errorf("%d spec examples pass; want at least %d", pass, specPassFloor)
	}
}

// allowedTags are every element the renderer may make.
var allowedTags = []string{"a", "p", "em", "strong", "del", "code", "pre", "blockquote", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "span", "img"}

// checkInert fails when rendered HTML holds an element outside
// allowedTags, an attribute that runs script, or a link to a scheme other
// than http, https or mailto.
func checkInert(t *testing.T, src, out string) {
	t.Helper()
	for _, m := range regexp.MustCompile(`<(/?)([a-zA-Z0-9]+)([^>]*)>`).FindAllStringSubmatch(out, -1) {
		if !slices.Contains(allowedTags, m[2]) {
			t.Errorf("input %q: element <%s> in %q", src, m[2], out)
		}
		for _, a := range regexp.MustCompile(` ([a-z-]+)="([^"]*)"`).FindAllStringSubmatch(m[3], -1) {
			switch a[1] {
			case "href", "src":
				v := html.UnescapeString(a[2])
				if s := regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`).FindStringSubmatch(v); s != nil && !slices.Contains([]string{"http", "https", "mailto"}, strings.ToLower(s[1])) {
					t.Errorf("input %q: link to %q", src, v)
				}
				if strings.ContainsAny(v, " \t\n\r\x00") {
					t.Errorf("input %q: href %q could hide a scheme", src, v)
				}
			case "title", "class", "start", "align", "rel", "target", "alt":
			default:
				t.Errorf("input %q: attribute %s in %q", src, a[1], out)
			}
		}
	}
}

// TestMarkdownInert: links to javascript:, data:, vbscript: and friends,
// however spelled (entities, escapes, case, white space, nested
// brackets, autolinks, references, images), render as text, and no
// input makes an element outside the renderer's short list. Random
// mixtures of markdown's special characters are fuzzed the same way.
func TestMarkdownInert(t *testing.T) {
	_, node := testexe.NodeModules(t)
	attacks := []string{
		"[x](javascript:alert(1))",
		"[x](JaVaScRiPt:alert(1))",
		"[x](&#106;avascript:alert(1))",
		"[x](&#x6A;avascript&colon;alert(1))",
		"[x](java\\script:alert(1))",
		"[x]( javascript:alert(1))",
		"[x](<javascript:alert(1)>)",
		"[x](<java\tscript:alert(1)>)",
		"[x](<\x01javascript:alert(1)>)",
		"[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
		"[x](vbscript:msgbox(1))",
		"[x](file:///etc/passwd)",
		"<javascript:alert(1)>",
		"<data:text/html,<script>alert(1)</script>>",
		"![x](javascript:alert(1))",
		"![x](data:image/svg+xml,<svg onload=alert(1)>)",
		"[x][r]\n\n[r]: javascript:alert(1)",
		"[x]\n\n[x]: <javascript:alert(1)> \"t\"",
		"[[[x](javascript:a)](javascript:b)](javascript:c)",
		"[a [b](javascript:x) c](http://ok)",
		"[x](http://ok \"\\\" onmouseover=alert(1) x=\\\"\")",
		"<script>alert(1)</script>",
		"<img src=x onerror=alert(1)>",
		"<a href=\"javascript:alert(1)\">x</a>",
		"&lt;script&gt;alert(1)&lt;/script&gt;",
		"```js\" onmouseover=\"alert(1)\n1\n```",
		"| a |\n| - |\n| <script>x</script> |",
		"[x](javascript&#58;alert(1))",
		"[x](\\javascript:alert(1))",
		"[x](%6Aavascript:alert(1))",
	}
	rnd := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	pieces := []string{"[", "]", "(", ")", "<", ">", "!", "*", "_", "~", "`", "\\", "&", "#", ";", ":", "\n", " ", "\t", "|", "-", "javascript", "data", "http", "//", "x", "\"", "'", "&#106;", "&colon;", "> ", "- ", "1. ", "```", "    "}
	for range 400 {
		var b strings.Builder
		for range rnd.IntN(40) + 1 {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		attacks = append(attacks, b.String())
	}
	for _, page := range []bool{false, true} {
		out := renderMarkdown(t, node, attacks, map[string]string{"colon": ":"}, page)
		for i, src := range attacks {
			checkInert(t, src, out.HTML[i])
		}
		if !strings.Contains(out.HTML[0], `<span class="unsafe-link">x</span>`) {
			t.Errorf("a javascript: link renders as %q; want its text in a span", out.HTML[0])
		}
	}
}

// mdTimeLimit is how long one pathological document may take to render
// under node; linear parsing takes a few milliseconds per hundred
// kilobytes, so this is slack for a loaded machine, not a target.
const mdTimeLimit = 3 * time.Second

// TestMarkdownLinearTime renders a 10 000-line message (about the
// relay's default 256 KiB event limit) and inputs built
// to make backtracking or nested-bracket parsers quadratic; each must
// finish well within mdTimeLimit.
func TestMarkdownLinearTime(t *testing.T) {
	_, node := testexe.NodeModules(t)
	var long strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&long, "%d **b** `c` [l](http://e/%d) _e_\n", i, i)
		if i%50 == 0 {
			long.WriteString("\n- item\n  - nested\n> quote\n\n```go\nfunc f() {}\n```\n")
		}
	}
	n := 50000
	docs := map[string]string{
		"10 000 lines":       long.String(),
		"open brackets":      strings.Repeat("[", n),
		"nested brackets":    strings.Repeat("[", n/2) + strings.Repeat("]", n/2),
		"open bracket links": strings.Repeat("[a](", n/4),
		"images":             strings.Repeat("![", n/2),
		"asterisks":          strings.Repeat("*a ", n/3),
		"mixed emphasis":     strings.Repeat("*_", n/2),
		"backticks of lengths": func() string {
			var b strings.Builder
			for i := 1; b.Len() < n; i++ {
				b.WriteString(strings.Repeat("`", i%200+1) + "x")
			}
			return b.String()
		}(),
		"angle brackets": strings.Repeat("<a", n/2),
		"block quotes":   strings.Repeat(">", n),
		"list markers":   strings.Repeat("- ", n/2),
		"nested lists": func() string {
			var b strings.Builder
			for i := range 200 {
				b.WriteString(strings.Repeat(" ", i*2) + "- x\n")
			}
			return b.String()
		}(),
		"entities":         strings.Repeat("&amp", n/4),
		"backslashes":      strings.Repeat("\\", n),
		"link titles":      strings.Repeat("[a](b \"", n/8),
		"reference labels": strings.Repeat("[a]: ", n/5),
		"table":            "| a | b |\n| - | - |\n" + strings.Repeat("| x | y |\n", n/10),
	}
	var names []string
	var srcs []string
	for name, d := range docs {
		names = append(names, name)
		srcs = append(srcs, d)
	}
	out := renderMarkdown(t, node, srcs, nil, true)
	for i, name := range names {
		took := time.Duration(out.MS[i] * float64(time.Millisecond))
		t.Logf("%s (%d bytes): %v", name, len(srcs[i]), took)
		if took > mdTimeLimit {
			t.Errorf("%s (%d bytes) took %v; want under %v", name, len(srcs[i]), took, mdTimeLimit)
		}
	}
}
