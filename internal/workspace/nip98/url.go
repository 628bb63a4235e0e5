package nip98

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// NormalizeURL returns the form two URLs are compared in: scheme and host
// lower-cased, the loopback spellings localhost, 127.0.0.1 and ::1 folded to
// 127.0.0.1, a default port (80 for http/ws, 443 for https/wss) dropped,
// trailing slashes of the path removed, the query kept, fragment and user
// info dropped. Distinct domains never become equal.
func NormalizeURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("nip98: parse URL %q: %w", raw, err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("nip98: URL %q is not absolute", raw)
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	switch host {
	case "localhost", "127.0.0.1", "::1":
		host = "127.0.0.1"
	}
	if (port == "80" && (scheme == "http" || scheme == "ws")) || (port == "443" && (scheme == "https" || scheme == "wss")) {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	out := scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out, nil
}

// SameURL reports whether a and b name the same resource after
// NormalizeURL. Unparsable URLs are never the same.
func SameURL(a, b string) bool {
	na, err := NormalizeURL(a)
	if err != nil {
		return false
	}
	nb, err := NormalizeURL(b)
	return err == nil && na == nb
}

// RequestURL returns the URL a request was made for: scheme, the Host
// header, the path and the query. The server supplies the scheme it is
// reached by (https behind TLS), since the request alone does not say.
// The Host header is the client's to choose: a server that checks tokens
// against RequestURL accepts a token minted for any other server. Build
// Expect.URL from the server's own name instead (see PathURL).
func RequestURL(r *http.Request, scheme string) string {
	s := scheme + "://" + r.Host + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		s += "?" + r.URL.RawQuery
	}
	return s
}

// Git smart-HTTP endpoints that follow a repository's root path.
const (
	gitInfoRefs    = "/info/refs"
	gitUploadPack  = "/git-upload-pack"
	gitReceivePack = "/git-receive-pack"
)

// RepoRoot returns the repository root of a git smart-HTTP path: the path
// cut at the first "/info/refs" (dropping what follows, query included), else
// with a trailing "/git-upload-pack" or "/git-receive-pack" removed, else the
// path as it is. Both the credential helper (what it signs) and the server
// (what it expects) use it, so they agree on the `u` of git tokens.
func RepoRoot(path string) string {
	if i := strings.Index(path, gitInfoRefs); i >= 0 {
		return path[:i]
	}
	for _, suffix := range []string{gitUploadPack, gitReceivePack} {
		if strings.HasSuffix(path, suffix) {
			return strings.TrimSuffix(path, suffix)
		}
	}
	return path
}

// PathURL returns base (scheme://host[:port] of the server's own name,
// without a trailing slash) joined with the request's path and query: the
// URL a token for this request must name.
func PathURL(base string, r *http.Request) string {
	s := base + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		s += "?" + r.URL.RawQuery
	}
	return s
}

// GitPathURL returns base joined with RepoRoot of the request's path,
// query dropped: the URL a git token for this request must name.
func GitPathURL(base string, r *http.Request) string {
	return base + RepoRoot(r.URL.EscapedPath())
}

// GitRepoURL returns the URL a git token must name for a request: scheme,
// Host header and RepoRoot of the path, query dropped. Like RequestURL it
// trusts the Host header; servers should use GitPathURL.
func GitRepoURL(r *http.Request, scheme string) string {
	return scheme + "://" + r.Host + RepoRoot(r.URL.EscapedPath())
}
