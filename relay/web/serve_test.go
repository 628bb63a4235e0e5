package web_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"
)

// startBinary runs the built buzz-relay on a free port (--open unless
// args say who the members are) and returns its http base URL.
func startBinary(t testing.TB, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if len(args) == 0 {
		args = []string{"--open"}
	}
	args = append(args, "--data", t.TempDir(), "--listen", addr)
	cmd := exec.CommandContext(ctx, testexe.Link(t, "buzz-relay"), args...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// ready closes at the relay's "listening" line (or its end); only the
	// reader below touches it. The reader is done before cmd.Wait, which
	// must not run before every read of the pipe has completed, and
	// before the test ends, which its t.Log must not outlive.
	ready, read := make(chan struct{}), make(chan struct{})
	go func() { // ends when the relay's stderr closes
		defer close(read)
		listening := false
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log(sc.Text())
			if !listening && strings.Contains(sc.Text(), "listening") {
				listening = true
				close(ready)
			}
		}
		if !listening {
			close(ready)
		}
	}()
	t.Cleanup(func() { cancel(); <-read; cmd.Wait() })
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
	if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "*") || strings.Contains(csp, " ws: ") || strings.Contains(csp, " wss:;") {
		t.Errorf("CSP %q allows unsafe or any-host sources", csp)
	}
	host := strings.TrimPrefix(base, "http://")
	if want := "connect-src 'self' ws://" + host + " wss://" + host + ";"; !strings.Contains(csp, want) {
		t.Errorf("CSP %q; want websockets to this origin only: %q", csp, want)
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

// TestAttackHostHeaderCannotWidenCSP sends Host headers that try to add
// CSP sources or directives; the policy never carries them.
func TestAttackHostHeaderCannotWidenCSP(t *testing.T) {
	base := startBinary(t)
	addr := strings.TrimPrefix(base, "http://")
	for _, host := range []string{"evil.example; script-src *", "a b", "x'unsafe-inline'", "h\tx", "example.com,*"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		b, _ := io.ReadAll(io.LimitReader(c, 1<<20))
		c.Close()
		head, _, _ := strings.Cut(string(b), "\r\n\r\n")
		for _, line := range strings.Split(head, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Security-Policy") {
				if strings.Contains(v, "*") || strings.Contains(v, "unsafe") || strings.Contains(v, "evil") || strings.Count(v, "script-src") != 1 {
					t.Errorf("Host %q: CSP %q carries the header's text", host, v)
				}
			}
		}
		if !strings.HasPrefix(head, "HTTP/1.1 ") {
			t.Errorf("Host %q: no HTTP answer: %q", host, head)
		}
	}
}
