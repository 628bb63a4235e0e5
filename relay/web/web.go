// Package web is the browser client buzz-relay serves at /: static ES
// modules, one stylesheet and one page, embedded in the executable so the
// relay serves them from an empty root, offline, with no CDN.
//
// The page is a Nostr client like any other: it signs its own events in
// the browser (a key it made or was given, or a NIP-07 extension), talks
// NIP-01/NIP-42 over the relay's websocket and never sends a private key
// to the server. This package only serves bytes; it reads no request body
// and keeps no state beyond the compressed copies of its assets.
//
// Served: GET and HEAD of / (the page) and of /static/… (modules, style).
// Every response carries a strict Content-Security-Policy (no inline
// script or style, no other origin) and the usual hardening headers.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

//go:embed static
var files embed.FS

// Prefix is the URL path under which the assets are served.
const Prefix = "/static/"

// policy returns the Content-Security-Policy of a response to a request
// for host: only this origin's scripts and styles, no inline code, no
// framing; images from this origin, data: and blob: (files fetched
// with an authorization are shown from blob: URLs, files.js); websockets to this origin only ('self' covers ws: and wss: in
// current browsers; the explicit ws:// and wss:// sources cover older
// ones). A host that is not a plain name or address gets 'self' alone.
func policy(host string) string {
	connect := "'self'"
	if validHost(host) {
		connect += " ws://" + host + " wss://" + host
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
		"font-src 'self'; connect-src " + connect + "; object-src 'none'; base-uri 'none'; " +
		"form-action 'none'; frame-ancestors 'none'"
}

// validHost accepts a DNS name, IPv4 or bracketed IPv6 address with an
// optional port: nothing that could end a CSP source or directive.
func validHost(h string) bool {
	if h == "" || len(h) > 262 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// asset is one embedded file ready to serve.
type asset struct {
	body, gz []byte
	ctype    string
	etag     string
}

// Handler serves the page and its assets. Build it once; it is safe for
// concurrent use.
type Handler struct {
	once   sync.Once
	assets map[string]*asset // URL path → asset
}

// New returns a Handler. Nothing is read or compressed until Prepare or
// the first request.
func New() *Handler { return &Handler{} }

// Prepare reads and compresses the assets now (tens of milliseconds), so
// that the first page a person opens does not wait for it. A request
// made meanwhile waits for the same work.
func (h *Handler) Prepare() { h.once.Do(h.load) }

// Serves reports whether the handler answers path: / or an asset path.
func Serves(p string) bool { return p == "/" || strings.HasPrefix(p, Prefix) }

func (h *Handler) load() {
	h.assets = make(map[string]*asset)
	fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) { // the OS mime table may be absent in an empty root
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".html":
			ctype = "text/html; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		}
		a := &asset{body: b, gz: gz.Bytes(), ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		url := "/" + p // /static/…
		if p == "static/index.html" {
			url = "/"
		}
		h.assets[url] = a
		return nil
	})
}

// Sizes returns the served paths with their raw and gzip sizes, for the
// size budget test.
func (h *Handler) Sizes() map[string][2]int {
	h.once.Do(h.load)
	out := make(map[string][2]int, len(h.assets))
	for p, a := range h.assets {
		out[p] = [2]int{len(a.body), len(a.gz)}
	}
	return out
}

// SetHeaders writes the security headers every response of the page
// carries; host is the request's Host.
func SetHeaders(w http.ResponseWriter, host string) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", policy(host))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
}

// ServeHTTP answers GET and HEAD of the page and its assets.
func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h.once.Do(h.load)
	SetHeaders(w, req.Host)
	a, ok := h.assets[req.URL.Path]
	if !ok || req.URL.Path == "/static/index.html" {
		http.Error(w, "buzz-relay: no such page: "+req.URL.Path, http.StatusNotFound)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "buzz-relay: "+req.Method+" "+req.URL.Path+": only GET and HEAD are served here", http.StatusMethodNotAllowed)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	// Revalidate every time: the ETag makes that a 304 with no body, and
	// a new build of the relay is picked up on the next load.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", a.etag)
	hd.Set("Vary", "Accept-Encoding")
	if match := req.Header.Get("If-None-Match"); match != "" && strings.Contains(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if acceptsGzip(req.Header.Get("Accept-Encoding")) {
		hd.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	if req.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

// acceptsGzip reads an Accept-Encoding header (RFC 9110 §12.5.3): gzip
// (or *) listed with a q-value above zero. Malformed parts are skipped.
func acceptsGzip(ae string) bool {
	star := false
	for _, part := range strings.Split(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f < 0 || f > 1 {
					f = 0
				}
				q = f
			}
		}
		if name == "gzip" {
			return q > 0
		}
		star = q > 0
	}
	return star
}
