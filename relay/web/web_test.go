package web

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"
)

// TestPageSizeBudget keeps the whole page, compressed as served, within
// maxPageGzipBytes.
func TestPageSizeBudget(t *testing.T) {
	total, raw := 0, 0
	for p, s := range New().Sizes() {
		raw += s[0]
		total += s[1]
		t.Logf("%-28s %7d raw %7d gzip", p, s[0], s[1])
	}
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
				if m := banned.FindString(line); m != "" {
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

// startBinary runs the built buzz-relay --open on a free port and returns
// its http base URL.
func startBinary(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, testexe.Link(t, "buzz-relay"), "--open", "--data", t.TempDir(), "--listen", addr)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	ready := make(chan struct{})
	go func() { // ends when the relay's stderr closes
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log(sc.Text())
			if strings.Contains(sc.Text(), "listening") {
				close(ready)
				ready = nil
			}
		}
		if ready != nil {
			close(ready)
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("buzz-relay did not start listening")
	}
	return "http://" + addr
}

// TestServesPageWithStrictHeaders fetches the page and a module from the
// built relay: strict CSP, nosniff, no framing, revalidated caching with
// an ETag that answers 304, gzip when asked, and NIP-11 still answered
// on / for clients that ask for it.
func TestServesPageWithStrictHeaders(t *testing.T) {
	base := startBinary(t)
	get := func(path string, hdr map[string]string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		tr := &http.Transport{DisableCompression: true}
		res, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	res := get("/", nil)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(body), `<script type="module" src="/static/js/app.js">`) {
		t.Fatalf("GET / = %d %q; want the page", res.StatusCode, body[:min(len(body), 200)])
	}
	for k, want := range map[string]string{
		"Content-Type": "text/html; charset=utf-8", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
		"Referrer-Policy": "no-referrer", "Cache-Control": "no-cache",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("GET / %s = %q; want %q", k, got, want)
		}
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self';", "style-src 'self';", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "*") {
		t.Errorf("CSP %q allows unsafe sources", csp)
	}
	etag := res.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag on /")
	}
	if r := get("/", map[string]string{"If-None-Match": etag}); r.StatusCode != http.StatusNotModified {
		t.Errorf("GET / with If-None-Match = %d; want 304", r.StatusCode)
	}
	js := get("/static/js/schnorr.js", map[string]string{"Accept-Encoding": "gzip"})
	if js.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(js.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("module: encoding %q type %q; want gzip javascript", js.Header.Get("Content-Encoding"), js.Header.Get("Content-Type"))
	}
	zr, err := gzip.NewReader(js.Body)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := io.ReadAll(zr)
	if !strings.Contains(string(src), "export function sign(") {
		t.Error("gzip'd module does not hold the module")
	}
	if r := get("/static/nope.js", nil); r.StatusCode != 404 || r.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("missing asset = %d (CSP %q); want 404 with the CSP", r.StatusCode, r.Header.Get("Content-Security-Policy"))
	}
	if r := get("/static/../relay.key", nil); r.StatusCode == 200 {
		t.Errorf("GET /static/../relay.key = 200; want no file outside the assets")
	}
	info := get("/", map[string]string{"Accept": "application/nostr+json"})
	if b, _ := io.ReadAll(info.Body); !strings.Contains(string(b), `"pubkey"`) {
		t.Errorf("NIP-11 on / = %s; want the relay document", b)
	}
}
