package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// authServer is one HTTP server playing a protected MCP server and its
// authorization server: /mcp wants a bearer token with scope "read", and
// "read write" for tools/call; /token grants client_credentials (and
// refresh_token) to client "cid" with secret "s3cret" sent as
// client_secret_post.
type authServer struct {
	hs *httptest.Server
	// resource overrides the resource the metadata names.
	resource string
	// tokenEndpoint overrides the token endpoint the metadata names.
	tokenEndpoint string
	// noPRM: no protected-resource metadata anywhere, and challenges
	// without resource_metadata (a 2025-03-26 server).
	noPRM bool
	// alwaysForbid answers every authorized tools/call 403 insufficient_scope.
	alwaysForbid bool
	// expiresIn is the lifetime of granted tokens, in seconds.
	expiresIn int

	mu       sync.Mutex
	tokens   map[string]string // token -> scope
	requests []string          // "grant scope" of each token request
}

func newAuthServer(t *testing.T) *authServer {
	a := &authServer{tokens: map[string]string{}, expiresIn: 3600}
	a.hs = httptest.NewServer(a)
	t.Cleanup(func() {
		a.hs.CloseClientConnections()
		a.hs.Close()
	})
	return a
}

func (a *authServer) url() string { return a.hs.URL + "/mcp" }

func (a *authServer) tokenRequests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.requests...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (a *authServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prm := fmt.Sprintf(", resource_metadata=%q", a.hs.URL+"/.well-known/oauth-protected-resource/mcp")
	if a.noPRM {
		prm = ""
	}
	switch r.URL.Path {
	case "/.well-known/oauth-protected-resource/mcp":
		if a.noPRM {
			http.NotFound(w, r)
			return
		}
		res := a.resource
		if res == "" {
			res = a.url()
		}
		writeJSON(w, 200, map[string]any{"resource": res, "authorization_servers": []string{a.hs.URL}})
	case "/.well-known/oauth-authorization-server":
		te := a.tokenEndpoint
		if te == "" {
			te = a.hs.URL + "/token"
		}
		writeJSON(w, 200, map[string]any{"issuer": a.hs.URL, "token_endpoint": te,
			"grant_types_supported": []string{"client_credentials", "refresh_token"}, "token_endpoint_auth_methods_supported": []string{"client_secret_post"}})
	case "/token":
		r.ParseForm()
		if r.PostForm.Get("client_id") != "cid" || r.PostForm.Get("client_secret") != "s3cret" || r.PostForm.Get("resource") != a.url() {
			writeJSON(w, 401, map[string]any{"error": "invalid_client"})
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		grant, scope := r.PostForm.Get("grant_type"), r.PostForm.Get("scope")
		if grant == "refresh_token" {
			scope = a.tokens["refresh:"+r.PostForm.Get("refresh_token")]
		}
		a.requests = append(a.requests, grant+" "+scope)
		tok := fmt.Sprintf("tok-%d", len(a.requests))
		a.tokens[tok] = scope
		a.tokens["refresh:r-"+tok] = scope
		writeJSON(w, 200, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": a.expiresIn, "refresh_token": "r-" + tok, "scope": scope})
	case "/mcp":
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m rpcMessage
		json.NewDecoder(r.Body).Decode(&m)
		a.mu.Lock()
		scope, ok := a.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		a.mu.Unlock()
		if !ok || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", scope="read"`+prm)
			writeJSON(w, 401, map[string]any{"error": "invalid_token"})
			return
		}
		if m.Method == "tools/call" && (a.alwaysForbid || !strings.Contains(scope, "write")) {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="read write"`+prm)
			writeJSON(w, 403, map[string]any{"error": "insufficient_scope"})
			return
		}
		switch {
		case m.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "initialize":
			writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "a", "version": "1"}}})
		case m.Method == "tools/list":
			writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"tools": []map[string]any{{"name": "whoami", "inputSchema": map[string]any{"type": "object"}}}}})
		default:
			writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"content": []map[string]any{{"type": "text", "text": "scope " + scope}}}})
		}
	default:
		http.NotFound(w, r)
	}
}

// oauthOpts returns registry options whose state dir holds a clients.json
// (mode perm) registering cid/s3cret for server.
func oauthOpts(t *testing.T, server string, perm os.FileMode) (Options, string) {
	state := t.TempDir()
	b, _ := json.Marshal(map[string]any{server: map[string]string{"client_id": "cid", "client_secret": "s3cret"}})
	os.MkdirAll(filepath.Join(state, "mcp-oauth"), 0o700)
	if err := os.WriteFile(filepath.Join(state, "mcp-oauth", "clients.json"), b, perm); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(state, "mcp-oauth", "clients.json"), perm)
	opts := testOpts(t)
	opts.Environ = append(opts.Environ, "BUZZ_AGENT_STATE_DIR="+state)
	return opts, state
}

// TestOAuthClientCredentialsStepUpAndReuse: the server's 401 leads to a
// client_credentials token for the scope it named; tools/call's 403
// insufficient_scope to one for the union; the token file is 0600 and a
// later registry (a new session) uses it without asking again.
func TestOAuthClientCredentialsStepUpAndReuse(t *testing.T) {
	a := newAuthServer(t)
	opts, state := oauthOpts(t, a.url(), 0o600)
	r := newRegistry(t, opts, Spec{Name: "remote", Type: "http", URL: a.url()})
	res, err := r.Call(context.Background(), "remote__whoami", nil, 5*time.Second)
	if err != nil || resultText(res) != "scope read write" {
		t.Fatalf("whoami = %+v, %v; want it run with scope read write", res, err)
	}
	r.Close()
	if got, want := strings.Join(a.tokenRequests(), ", "), "client_credentials read, client_credentials read write"; got != want {
		t.Errorf("token requests = %s; want %s", got, want)
	}
	files, _ := filepath.Glob(filepath.Join(state, "mcp-oauth", "tokens", "*.json"))
	if len(files) != 1 {
		t.Fatalf("token files = %v; want one", files)
	}
	fi, _ := os.Stat(files[0])
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %04o; want 0600", fi.Mode().Perm())
	}
	r2 := newRegistry(t, opts, Spec{Name: "remote", Type: "http", URL: a.url()})
	defer r2.Close()
	if res, err := r2.Call(context.Background(), "remote__whoami", nil, 5*time.Second); err != nil || resultText(res) != "scope read write" {
		t.Fatalf("second session whoami = %+v, %v", res, err)
	}
	if n := len(a.tokenRequests()); n != 2 {
		t.Errorf("token requests after a second session = %d; want the stored token reused (2)", n)
	}
}

// TestOAuthWithoutResourceMetadata: a server that publishes no
// protected-resource metadata (MCP 2025-03-26) has its origin taken as the
// authorization server, and the server's URL as the resource.
func TestOAuthWithoutResourceMetadata(t *testing.T) {
	a := newAuthServer(t)
	a.noPRM = true
	opts, _ := oauthOpts(t, a.url(), 0o600)
	r := newRegistry(t, opts, Spec{Name: "remote", Type: "http", URL: a.url()})
	defer r.Close()
	if res, err := r.Call(context.Background(), "remote__whoami", nil, 5*time.Second); err != nil || resultText(res) != "scope read write" {
		t.Fatalf("whoami = %+v, %v", res, err)
	}
}

// TestOAuthExpiredTokenRefreshed: a token whose lifetime ran out is
// replaced through its refresh token before the next request.
func TestOAuthExpiredTokenRefreshed(t *testing.T) {
	a := newAuthServer(t)
	a.expiresIn = 1 // inside tokenExpirySkew: stale as soon as granted
	opts, _ := oauthOpts(t, a.url(), 0o600)
	r := newRegistry(t, opts, Spec{Name: "remote", Type: "http", URL: a.url()})
	defer r.Close()
	if _, err := r.Call(context.Background(), "remote__whoami", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	reqs := a.tokenRequests()
	if len(reqs) < 3 || reqs[0] != "client_credentials read" || !strings.HasPrefix(reqs[1], "refresh_token ") {
		t.Errorf("token requests = %q; want client_credentials, then refreshes", reqs)
	}
}

// TestOAuthScopeChallengeLoopBounded: a server that answers 403
// insufficient_scope whatever the token costs one MCP request at most
// maxAuthAttempts token requests, then the call fails.
func TestOAuthScopeChallengeLoopBounded(t *testing.T) {
	a := newAuthServer(t)
	a.alwaysForbid = true
	opts, _ := oauthOpts(t, a.url(), 0o600)
	r := newRegistry(t, opts, Spec{Name: "remote", Type: "http", URL: a.url()})
	defer r.Close()
	before := len(a.tokenRequests())
	_, err := r.Call(context.Background(), "remote__whoami", nil, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("whoami = %v; want the 403", err)
	}
	if n := len(a.tokenRequests()) - before; n > maxAuthAttempts {
		t.Errorf("%d token requests for one call; want at most %d", n, maxAuthAttempts)
	}
}

// TestAttackOAuthResourceMismatch: protected-resource metadata that names
// another resource gets no token request, so the client secret is not
// spent on a token for someone else's server.
func TestAttackOAuthResourceMismatch(t *testing.T) {
	a := newAuthServer(t)
	a.resource = "https://elsewhere.example/mcp"
	opts, _ := oauthOpts(t, a.url(), 0o600)
	_, err := New(context.Background(), []Spec{{Name: "remote", Type: "http", URL: a.url()}}, opts)
	if err == nil || !strings.Contains(err.Error(), "names resource https://elsewhere.example/mcp") {
		t.Fatalf("New = %v; want the mismatch named", err)
	}
	if n := len(a.tokenRequests()); n != 0 {
		t.Errorf("%d token requests; want none", n)
	}
}

// TestAttackOAuthClientsFileReadableByOthers: a clients.json others may
// read is refused with the command that fixes it, and no secret is sent.
func TestAttackOAuthClientsFileReadableByOthers(t *testing.T) {
	a := newAuthServer(t)
	opts, _ := oauthOpts(t, a.url(), 0o644)
	_, err := New(context.Background(), []Spec{{Name: "remote", Type: "http", URL: a.url()}}, opts)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("New = %v; want a refusal naming chmod 600", err)
	}
	if n := len(a.tokenRequests()); n != 0 {
		t.Errorf("%d token requests; want none", n)
	}
}

// TestAttackOAuthForeignAuthorizationServer: a client pinned to its
// issuer does not send its secret to another authorization server the
// protected server's metadata names.
func TestAttackOAuthForeignAuthorizationServer(t *testing.T) {
	a := newAuthServer(t)
	opts, state := oauthOpts(t, a.url(), 0o600)
	b, _ := json.Marshal(map[string]any{a.url(): map[string]string{"client_id": "cid", "client_secret": "s3cret", "issuer": "https://login.example"}})
	if err := os.WriteFile(filepath.Join(state, oauthClientsFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), []Spec{{Name: "remote", Type: "http", URL: a.url()}}, opts)
	if err == nil || !strings.Contains(err.Error(), "registered with https://login.example") {
		t.Fatalf("New = %v; want the foreign authorization server refused", err)
	}
	if n := len(a.tokenRequests()); n != 0 {
		t.Errorf("%d token requests; want none", n)
	}
}

// TestAttackOAuthPlainHTTPTokenEndpoint: metadata naming a plain-http
// token endpoint on another machine gets no secret sent to it.
func TestAttackOAuthPlainHTTPTokenEndpoint(t *testing.T) {
	a := newAuthServer(t)
	a.tokenEndpoint = "http://192.0.2.1/token" // TEST-NET-1: never routed
	opts, _ := oauthOpts(t, a.url(), 0o600)
	_, err := New(context.Background(), []Spec{{Name: "remote", Type: "http", URL: a.url()}}, opts)
	if err == nil || !strings.Contains(err.Error(), "not https") {
		t.Fatalf("New = %v; want the plain-http token endpoint refused", err)
	}
}

// TestOAuthNoClientRegistered: a protected server without a registered
// client fails with what to put where.
func TestOAuthNoClientRegistered(t *testing.T) {
	a := newAuthServer(t)
	opts, state := oauthOpts(t, "http://other.example/mcp", 0o600)
	_, err := New(context.Background(), []Spec{{Name: "remote", Type: "http", URL: a.url()}}, opts)
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized; oauth: no client registered for "+a.url()) || !strings.Contains(err.Error(), filepath.Join(state, oauthClientsFile)) {
		t.Fatalf("New = %v; want the missing client and the file named", err)
	}
}

func TestParseChallenges(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want challenge
		ok   bool
	}{
		{[]string{`Bearer error="invalid_token", resource_metadata="https://a/b"`}, challenge{Error: "invalid_token", ResourceMetadata: "https://a/b"}, true},
		{[]string{`Basic realm="x", Bearer scope="a b", error=insufficient_scope`}, challenge{Error: "insufficient_scope", Scope: "a b"}, true},
		{[]string{`Basic realm="x"`, `bearer scope="q\"uote"`}, challenge{Scope: `q"uote`}, true},
		{[]string{`Basic realm="x"`}, challenge{}, false},
		{nil, challenge{}, false},
	} {
		got, ok := parseChallenges(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseChallenges(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseChallenges: any header value parses without panic or hang, and
// a Bearer challenge built from the parsed values parses back to them.
func FuzzParseChallenges(f *testing.F) {
	f.Add(`Bearer error="invalid_token", scope="a b", resource_metadata="https://x/y"`)
	f.Add(`Basic realm=x, Bearer scope=a`)
	f.Add(`Bearer ,,, =, "`)
	f.Fuzz(func(t *testing.T, v string) {
		c, ok := parseChallenges([]string{v})
		if !ok {
			return
		}
		q := func(s string) string { return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) }
		again, ok := parseChallenges([]string{fmt.Sprintf(`Bearer error="%s", scope="%s", resource_metadata="%s"`, q(c.Error), q(c.Scope), q(c.ResourceMetadata))})
		if !ok || again != c {
			t.Fatalf("round trip of %+v = %+v, %v", c, again, ok)
		}
	})
}

// TestHTTP401WithoutBearerChallenge: a server that refuses with a bare 401
// (an API key of its own, say) and has no OAuth client registered gets its
// status reported, not advice about OAuth.
func TestHTTP401WithoutBearerChallenge(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad api key", http.StatusUnauthorized)
	}))
	defer hs.Close()
	opts := testOpts(t)
	opts.Environ = append(opts.Environ, "BUZZ_AGENT_STATE_DIR="+t.TempDir())
	_, err := New(context.Background(), []Spec{{Name: "remote", Type: "http", URL: hs.URL}}, opts)
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized: bad api key") || strings.Contains(err.Error(), "oauth") {
		t.Fatalf("New = %v; want the server's 401 and its text", err)
	}
}
