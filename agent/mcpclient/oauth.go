package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"buzzbox/internal/mcp"
)

// OAuth 2.1 for remote MCP servers, for the flows that need no person:
// a client registered beforehand (client id and secret in
// <state>/mcp-oauth/clients.json, keyed by the server's URL) obtains
// tokens with the client credentials grant; an "issuer" there pins the
// authorization server the secret may go to. The server's 401 names its
// protected-resource metadata (RFC 9728) in WWW-Authenticate, or the
// well-known locations are tried; that names the authorization server,
// whose metadata (RFC 8414, or OpenID discovery) gives the token endpoint.
// Token requests carry the resource indicator (RFC 8707). Tokens are kept
// per server in <state>/mcp-oauth/tokens/, 0600, refreshed with a refresh
// token when one was issued, else requested anew. A 403 with
// error="insufficient_scope" asks again for the union of the scopes.
//
// The client authenticates with its secret (client_secret_basic or
// client_secret_post) or with a private key (private_key_jwt, ES256 or
// RS256 assertions).
//
// Not done: the authorization code grant (it needs a person at a browser),
// and dynamic client registration and client ID metadata documents, which
// are useful only with it.

// oauthClientsFile and oauthTokensDir are relative to the agent's state dir.
const (
	oauthClientsFile = "mcp-oauth/clients.json"
	oauthTokensDir   = "mcp-oauth/tokens"
)

// clientCredentials is one pre-registered client in clients.json.
type clientCredentials struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// Scope, when set, is asked for when the server names none.
	Scope string `json:"scope,omitempty"`
	// Issuer, when set, is the only authorization server the secret is
	// sent to, whatever the server's metadata names.
	Issuer string `json:"issuer,omitempty"`
	// PrivateKeyFile, instead of a secret, names a PEM private key that
	// signs private_key_jwt assertions (RFC 7523); relative to mcp-oauth/.
	PrivateKeyFile string `json:"private_key_file,omitempty"`
}

// storedToken is a token file's content.
type storedToken struct {
	Server        string    `json:"server"`
	ClientID      string    `json:"client_id"`
	TokenEndpoint string    `json:"token_endpoint"`
	Resource      string    `json:"resource,omitempty"`
	AccessToken   string    `json:"access_token"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	Scope         string    `json:"scope,omitempty"`
	ExpiresAt     time.Time `json:"expires_at,omitzero"`
	// AuthMethod is the token endpoint's client authentication in use.
	AuthMethod string `json:"auth_method"`
	// Issuer is the authorization server's, the audience of assertions.
	Issuer string `json:"issuer,omitempty"`
}

// oauthClient holds the bearer token of one remote server.
type oauthClient struct {
	server   string // the MCP endpoint URL
	stateDir string // "" when no state dir could be named
	hc       *http.Client
	log      *slog.Logger

	mu  sync.Mutex
	tok *storedToken
}

func newOAuth(server, stateDir string, hc *http.Client, log *slog.Logger) *oauthClient {
	o := &oauthClient{server: server, stateDir: stateDir, hc: hc, log: log}
	if tok, err := o.load(); err == nil {
		o.tok = tok
	}
	return o
}

func (o *oauthClient) tokenPath() string {
	sum := sha256.Sum256([]byte(o.server))
	return filepath.Join(o.stateDir, oauthTokensDir, hex.EncodeToString(sum[:8])+".json")
}

// load reads the server's stored token; one for another server or client
// is ignored.
func (o *oauthClient) load() (*storedToken, error) {
	if o.stateDir == "" {
		return nil, os.ErrNotExist
	}
	b, err := os.ReadFile(o.tokenPath())
	if err != nil {
		return nil, err
	}
	var tok storedToken
	if err := json.Unmarshal(b, &tok); err != nil {
		return nil, err
	}
	if tok.Server != o.server || tok.AccessToken == "" {
		return nil, os.ErrNotExist
	}
	if c, err := o.credentials(); err != nil || c.ClientID != tok.ClientID {
		return nil, os.ErrNotExist
	}
	return &tok, nil
}

// save writes the token file (0600, in a 0700 directory) by rename, so a
// reader never sees half of it.
func (o *oauthClient) save(tok *storedToken) error {
	if o.stateDir == "" {
		return nil
	}
	dir := filepath.Dir(o.tokenPath())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(tok)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), o.tokenPath())
}

// credentials returns the pre-registered client for the server. The file
// holds secrets, so one that others may read is refused.
func (o *oauthClient) credentials() (*clientCredentials, error) {
	if o.stateDir == "" {
		return nil, errors.New("no state directory (set BUZZ_AGENT_STATE_DIR) to hold " + oauthClientsFile)
	}
	path := filepath.Join(o.stateDir, oauthClientsFile)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("no client registered for %s: put {%q: {\"client_id\": \"…\", \"client_secret\": \"…\"}} in %s (mode 0600); sign-in at a browser is not supported", o.server, o.server, path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %04o): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var all map[string]clientCredentials
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	c, ok := all[o.server]
	if !ok || c.ClientID == "" || (c.ClientSecret == "" && c.PrivateKeyFile == "") {
		return nil, fmt.Errorf("no client registered for %s in %s: add {\"client_id\": \"…\", \"client_secret\": \"…\"} (or \"private_key_file\") under that URL; sign-in at a browser is not supported", o.server, path)
	}
	return &c, nil
}

// registered reports whether clients.json has a client for the server.
func (o *oauthClient) registered() bool {
	_, err := o.credentials()
	return err == nil
}

// current returns the Authorization value of the held token as it is,
// without refreshing; "" when there is none.
func (o *oauthClient) current() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tok == nil {
		return ""
	}
	return "Bearer " + o.tok.AccessToken
}

// header returns the Authorization value for the next request: the held
// token, refreshed first when it expired and a refresh token exists; ""
// when there is none yet.
func (o *oauthClient) header(ctx context.Context) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tok == nil {
		return ""
	}
	if !o.tok.ExpiresAt.IsZero() && time.Now().Add(tokenExpirySkew).After(o.tok.ExpiresAt) {
		if err := o.refresh(ctx); err != nil {
			o.log.Info("mcp oauth token expired and could not be refreshed", "server", o.server, "err", err)
			o.tok = nil
			return ""
		}
	}
	return "Bearer " + o.tok.AccessToken
}

// refresh uses the refresh token, or, without one, asks anew for the same
// scope with the client's credentials. o.mu is held.
func (o *oauthClient) refresh(ctx context.Context) error {
	c, err := o.credentials()
	if err != nil {
		return err
	}
	form := url.Values{}
	if o.tok.RefreshToken != "" {
		form.Set("grant_type", "refresh_token")
		form.Set("refresh_token", o.tok.RefreshToken)
	} else {
		form.Set("grant_type", "client_credentials")
		if o.tok.Scope != "" {
			form.Set("scope", o.tok.Scope)
		}
	}
	if o.tok.Resource != "" {
		form.Set("resource", o.tok.Resource)
	}
	tok, err := o.requestToken(ctx, o.tok.TokenEndpoint, o.tok.Issuer, o.tok.AuthMethod, c, form)
	if err != nil {
		return err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = o.tok.RefreshToken
	}
	if tok.Scope == "" {
		tok.Scope = o.tok.Scope
	}
	tok.Resource = o.tok.Resource
	o.tok = tok
	if err := o.save(tok); err != nil {
		o.log.Warn("mcp oauth token not saved", "server", o.server, "err", err)
	}
	return nil
}

// challenge is a WWW-Authenticate Bearer challenge's parameters.
type challenge struct {
	Error, Scope, ResourceMetadata string
}

// parseChallenges finds the Bearer challenge among WWW-Authenticate values
// (RFC 9110 §11.6.1 syntax: scheme, then comma-separated name=value where
// value is a token or a quoted string). ok is false when there is none.
func parseChallenges(values []string) (c challenge, ok bool) {
	for _, v := range values {
		s := strings.TrimSpace(v)
		for s != "" {
			scheme, rest, _ := strings.Cut(s, " ")
			params, next := parseAuthParams(rest)
			if strings.EqualFold(scheme, "Bearer") {
				return challenge{Error: params["error"], Scope: params["scope"], ResourceMetadata: params["resource_metadata"]}, true
			}
			s = strings.TrimSpace(next)
		}
	}
	return challenge{}, false
}

// parseAuthParams reads name=value pairs up to the start of the next
// challenge (a token not followed by '='); it returns the pairs, lowercase
// names, and the rest.
func parseAuthParams(s string) (map[string]string, string) {
	params := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return params, ""
		}
		eq := strings.IndexByte(s, '=')
		sp := strings.IndexAny(s, " \t,")
		if eq <= 0 || (sp >= 0 && sp < eq) {
			return params, s // the next challenge's scheme
		}
		name := strings.ToLower(strings.TrimSpace(s[:eq]))
		s = strings.TrimLeft(s[eq+1:], " \t")
		var val string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			val = b.String()
			s = s[min(i+1, len(s)):]
		} else {
			end := strings.IndexAny(s, " \t,")
			if end < 0 {
				end = len(s)
			}
			val, s = s[:end], s[end:]
		}
		if _, dup := params[name]; !dup {
			params[name] = val
		}
	}
}

// obtain gets a new token after a 401 or a 403 insufficient_scope: it
// discovers the authorization server from the challenge and asks for the
// scope the server named (added to the held one after a 403).
func (o *oauthClient) obtain(ctx context.Context, status int, ch challenge) error {
	c, err := o.credentials()
	if err != nil {
		return err
	}
	prm, err := o.resourceMetadata(ctx, ch.ResourceMetadata)
	if err != nil {
		return err
	}
	resource := o.server
	issuer := originOf(o.server)
	if prm != nil {
		if prm.Resource != "" {
			if !resourceCovers(prm.Resource, o.server) {
				return fmt.Errorf("protected resource metadata names resource %s, which is not %s; refusing to ask for a token for it", prm.Resource, o.server)
			}
			resource = prm.Resource
		}
		if len(prm.AuthorizationServers) == 0 {
			return errors.New("protected resource metadata names no authorization server")
		}
		issuer = prm.AuthorizationServers[0]
	}
	if c.Issuer != "" && strings.TrimSuffix(c.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return fmt.Errorf("the server names authorization server %s, but its client in %s is registered with %s; not sending the secret there", issuer, oauthClientsFile, c.Issuer)
	}
	as, err := o.serverMetadata(ctx, issuer)
	if err != nil {
		return err
	}
	if err := secureEndpoint(as.TokenEndpoint); err != nil {
		return fmt.Errorf("token endpoint %s: %w", as.TokenEndpoint, err)
	}
	if len(as.GrantTypes) > 0 && !slices.Contains(as.GrantTypes, "client_credentials") {
		return fmt.Errorf("authorization server %s offers no client_credentials grant (only %s); sign-in at a browser is not supported", issuer, strings.Join(as.GrantTypes, ", "))
	}
	method, err := authMethod(as.TokenEndpointAuthMethods, c.PrivateKeyFile != "")
	if err != nil {
		return err
	}
	scope := ch.Scope
	o.mu.Lock()
	held := o.tok
	o.mu.Unlock()
	if status == http.StatusForbidden && held != nil {
		scope = unionScopes(held.Scope, ch.Scope)
	}
	if scope == "" {
		scope = c.Scope
	}
	if scope == "" && prm != nil {
		scope = strings.Join(prm.ScopesSupported, " ")
	}
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}}
	if scope != "" {
		form.Set("scope", scope)
	}
	tok, err := o.requestToken(ctx, as.TokenEndpoint, issuer, method, c, form)
	if err != nil {
		return err
	}
	if tok.Scope == "" {
		tok.Scope = scope
	}
	tok.Resource = resource
	o.mu.Lock()
	o.tok = tok
	o.mu.Unlock()
	if err := o.save(tok); err != nil {
		o.log.Warn("mcp oauth token not saved", "server", o.server, "err", err)
	}
	o.log.Info("mcp oauth token obtained", "server", o.server, "scope", tok.Scope)
	return nil
}

type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

type serverMetadata struct {
	Issuer                   string   `json:"issuer"`
	TokenEndpoint            string   `json:"token_endpoint"`
	TokenEndpointAuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	GrantTypes               []string `json:"grant_types_supported"`
}

// resourceMetadata fetches the protected-resource metadata: from the URL
// the challenge named, else the path-aware well-known location, else the
// root one. nil without error means the server publishes none (2025-03-26
// servers), and the server's origin is its authorization server.
func (o *oauthClient) resourceMetadata(ctx context.Context, named string) (*resourceMetadata, error) {
	var urls []string
	if named != "" {
		urls = append(urls, named)
	} else {
		u, err := url.Parse(o.server)
		if err != nil {
			return nil, err
		}
		origin := u.Scheme + "://" + u.Host
		if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
			urls = append(urls, origin+"/.well-known/oauth-protected-resource"+p)
		}
		urls = append(urls, origin+"/.well-known/oauth-protected-resource")
	}
	for _, u := range urls {
		var m resourceMetadata
		found, err := o.getJSON(ctx, u, &m)
		if err != nil {
			return nil, fmt.Errorf("protected resource metadata %s: %w", u, err)
		}
		if found {
			return &m, nil
		}
	}
	if named != "" {
		return nil, fmt.Errorf("protected resource metadata %s: not found", named)
	}
	return nil, nil
}

// serverMetadata fetches the authorization server's metadata from the
// locations RFC 8414 and OpenID Connect Discovery give, path-aware first.
func (o *oauthClient) serverMetadata(ctx context.Context, issuer string) (*serverMetadata, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("authorization server %q is not a URL", issuer)
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	urls := []string{origin + "/.well-known/oauth-authorization-server" + p, origin + "/.well-known/openid-configuration" + p}
	if p != "" {
		urls = append(urls, origin+p+"/.well-known/openid-configuration")
	}
	for _, mu := range urls {
		var m serverMetadata
		found, err := o.getJSON(ctx, mu, &m)
		if err != nil {
			return nil, fmt.Errorf("authorization server metadata %s: %w", mu, err)
		}
		if !found {
			continue
		}
		if m.Issuer != "" && strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return nil, fmt.Errorf("authorization server metadata %s names issuer %s, not %s", mu, m.Issuer, issuer)
		}
		if m.TokenEndpoint == "" {
			return nil, fmt.Errorf("authorization server metadata %s names no token endpoint", mu)
		}
		return &m, nil
	}
	return nil, fmt.Errorf("authorization server %s publishes no metadata (tried %s)", issuer, strings.Join(urls, ", "))
}

// getJSON GETs u into v; found is false on a 4xx (the document is not
// there), an error on anything else that is not a 200 with JSON.
func (o *oauthClient) getJSON(ctx context.Context, u string, v any) (found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, oauthRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(mcp.HeaderProtocolVersion, protocolVersion)
	resp, err := o.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 4 {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, errors.New(resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxOAuthDocumentBytes)).Decode(v); err != nil {
		return false, fmt.Errorf("decode: %w", err)
	}
	return true, nil
}

// requestToken POSTs form to the token endpoint with the client's
// authentication and returns the token it grants.
func (o *oauthClient) requestToken(ctx context.Context, endpoint, issuer, method string, c *clientCredentials, form url.Values) (*storedToken, error) {
	switch method {
	case "client_secret_post":
		form.Set("client_id", c.ClientID)
		form.Set("client_secret", c.ClientSecret)
	case "private_key_jwt":
		key, alg, err := o.signingKey(c)
		if err != nil {
			return nil, err
		}
		jwt, err := clientAssertion(key, alg, c.ClientID, issuer, time.Now())
		if err != nil {
			return nil, fmt.Errorf("sign client assertion: %w", err)
		}
		form.Set("client_id", c.ClientID)
		form.Set("client_assertion_type", jwtAssertionType)
		form.Set("client_assertion", jwt)
	}
	ctx, cancel := context.WithTimeout(ctx, oauthRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if method == "client_secret_basic" {
		// RFC 6749 §2.3.1: both parts form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.ClientSecret))
	}
	resp, err := o.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("token request to %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxOAuthDocumentBytes))
	if err != nil {
		return nil, fmt.Errorf("token request to %s: %w", endpoint, err)
	}
	var tr struct {
		AccessToken  string      `json:"access_token"`
		TokenType    string      `json:"token_type"`
		ExpiresIn    json.Number `json:"expires_in"`
		RefreshToken string      `json:"refresh_token"`
		Scope        string      `json:"scope"`
		Error        string      `json:"error"`
		Description  string      `json:"error_description"`
	}
	if err := json.Unmarshal(b, &tr); err != nil || resp.StatusCode != http.StatusOK {
		if tr.Error != "" {
			return nil, fmt.Errorf("token request to %s: %s: %s %s", endpoint, resp.Status, tr.Error, tr.Description)
		}
		return nil, fmt.Errorf("token request to %s: %s: %s", endpoint, resp.Status, strings.TrimSpace(string(b[:min(len(b), maxHTTPErrorBytes)])))
	}
	if tr.AccessToken == "" || !strings.EqualFold(tr.TokenType, "Bearer") {
		return nil, fmt.Errorf("token request to %s: no bearer token in the answer (token_type %q)", endpoint, tr.TokenType)
	}
	tok := &storedToken{Server: o.server, ClientID: c.ClientID, TokenEndpoint: endpoint, Issuer: issuer, AuthMethod: method,
		AccessToken: tr.AccessToken, RefreshToken: tr.RefreshToken, Scope: tr.Scope}
	if s, err := strconv.ParseInt(tr.ExpiresIn.String(), 10, 64); err == nil && s > 0 {
		tok.ExpiresAt = time.Now().Add(time.Duration(min(s, int64(maxTokenLifetime/time.Second))) * time.Second)
	}
	return tok, nil
}

// authMethod picks the client authentication the token endpoint accepts;
// an empty list means client_secret_basic (RFC 8414 §2). A client with a
// private key uses private_key_jwt only.
func authMethod(supported []string, hasKey bool) (string, error) {
	if hasKey {
		if slices.Contains(supported, "private_key_jwt") {
			return "private_key_jwt", nil
		}
		return "", fmt.Errorf("the client signs with a private key, but the token endpoint accepts only %s", strings.Join(supported, ", "))
	}
	if len(supported) == 0 || slices.Contains(supported, "client_secret_basic") {
		return "client_secret_basic", nil
	}
	if slices.Contains(supported, "client_secret_post") {
		return "client_secret_post", nil
	}
	return "", fmt.Errorf("token endpoint accepts only %s; a client with a secret authenticates with client_secret_basic or client_secret_post (give private_key_file for private_key_jwt)", strings.Join(supported, ", "))
}

// secureEndpoint: client secrets go only over https, or plain http to this
// machine.
func secureEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if u.Scheme == "http" && (host == "localhost" || net.ParseIP(host).IsLoopback()) {
		return nil
	}
	return errors.New("not https; client secrets are sent only over https (or http to localhost)")
}

func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host
}

// resourceCovers reports whether the resource URL r names server: the same
// scheme and host, and a path that is server's or a prefix of it at a '/'.
func resourceCovers(r, server string) bool {
	ru, err1 := url.Parse(r)
	su, err2 := url.Parse(server)
	if err1 != nil || err2 != nil || ru.Fragment != "" {
		return false
	}
	if !strings.EqualFold(ru.Scheme, su.Scheme) || !strings.EqualFold(ru.Host, su.Host) {
		return false
	}
	rp := strings.TrimSuffix(ru.Path, "/")
	sp := strings.TrimSuffix(su.Path, "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}

// unionScopes joins two space-separated scope lists without repeats.
func unionScopes(a, b string) string {
	var out []string
	for _, s := range strings.Fields(a + " " + b) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// drain reads a little of a body being dropped so the connection can be
// reused, then closes it.
func drain(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxHTTPErrorBytes))
	body.Close()
}
