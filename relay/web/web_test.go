package web

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPageSizeBudget keeps the whole page, compressed as served, within
// maxPageGzipBytes.
func TestPageSizeBudget(t *testing.T) {
	total, raw := 0, 0
	sizes := New().Sizes()
	for p, s := range sizes {
		raw += s[0]
		total += s[1]
		t.Logf("%-28s %7d raw %7d gzip", p, s[0], s[1])
	}
	t.Logf("the page: %d files, %d bytes raw, %d gzip", len(sizes), raw, total)
	if total > maxPageGzipBytes {
		t.Errorf("page is %d bytes gzip'd (%d raw); the budget is %d", total, raw, maxPageGzipBytes)
	}
	if total == 0 {
		t.Fatal("no assets embedded")
	}
}

// TestAttackNoHTMLFromContent fails on any way event content could become
// markup or code: innerHTML and its relatives, eval, inline handlers or
// inline script and style in the page, resources from another origin.
func TestAttackNoHTMLFromContent(t *testing.T) {
	siblingImport := regexp.MustCompile(`\bimport\('\./[a-z0-9]+\.js'\)`)
	banned := regexp.MustCompile(`\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(|setAttribute\(\s*['"]style|setAttribute\(\s*['"]on|\.src\s*=|import\(`)
	fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := files.ReadFile(p)
		s := string(b)
		switch filepath.Ext(p) {
		case ".js":
			for i, line := range strings.Split(s, "\n") {
				// A module may import one of its siblings by a literal
				// name (app.js loads the workspace so); a specifier
				// computed from anything is refused.
				line = siblingImport.ReplaceAllString(line, "")
				// files.js shows images from the blob: URLs it made,
				// through a check that refuses anything else.
				if m := banned.FindString(line); m != "" && !regexp.MustCompile(`\.src = asBlobURL\(`).MatchString(line) {
					t.Errorf("%s:%d uses %q: build nodes with textContent instead", p, i+1, m)
				}
			}
		case ".html":
			for _, re := range []string{`<script(?:\s[^>]*)?>\s*[^<\s]`, `\son\w+\s*=`, `\sstyle\s*=`, `<style`, `(?:src|href)\s*=\s*"(?:https?:)?//`} {
				if m := regexp.MustCompile(re).FindString(s); m != "" {
					t.Errorf("%s has %q: the CSP forbids inline code and other origins", p, m)
				}
			}
		case ".css":
			if strings.Contains(s, "@import") || strings.Contains(s, "url(http") || strings.Contains(s, "url(//") {
				t.Errorf("%s loads from another origin", p)
			}
		}
		return nil
	})
}

func TestAcceptsGzip(t *testing.T) {
	for ae, want := range map[string]bool{
		"": false, "gzip": true, "GZIP": true, "br, gzip;q=0.5": true, "gzip;q=0": false, "gzip;q=0.0": false,
		"gzip; q=0.001": true, "deflate": false, "*": true, "*;q=0": false, "gzip;q=0, *": false, "identity, *;q=0.1": true,
		"gzip;q=abc": false, "gzip;q=2": false, ",,;": false,
	} {
		if got := acceptsGzip(ae); got != want {
			t.Errorf("acceptsGzip(%q) = %v; want %v", ae, got, want)
		}
	}
}

// FuzzAcceptsGzip: any header is read without a panic, and a header that
// names only gzip with no parameters always gets gzip.
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip;q=0", "br;q=1, gzip;q=0.8, *;q=0.1", ";;,=q"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ae string) {
		acceptsGzip(ae)
		if !acceptsGzip(ae+", gzip") && !strings.Contains(strings.ToLower(ae), "gzip") {
			t.Errorf("acceptsGzip(%q + \", gzip\") = false", ae)
		}
	})
}
