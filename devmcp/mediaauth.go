package devmcp

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
)

// Wire values of a relay media read token.
const (
	mediaTokenContent = "Get buzz-media"
	mediaPathPrefix   = "/media/"
)

// mediaAuth signs read tokens for the relay's own /media/ URLs, so
// view_image can show attachments a relay keeps behind authentication. The
// zero value signs nothing.
type mediaAuth struct {
	host    string // relay host, lowercased; "" disables signing
	port    string // relay's effective port
	secret  *nostrkey.Secret
	authTag string
}

// newMediaAuth reads the relay URL and key; anything missing or unusable
// leaves signing off (fetches go out unsigned).
func newMediaAuth(env proc.Env) mediaAuth {
	u, err := url.Parse(env.Getenv(workspace.EnvRelayURL))
	if err != nil || u.Hostname() == "" {
		return mediaAuth{}
	}
	port := effectivePort(u)
	if port == "" {
		return mediaAuth{}
	}
	raw := env.Getenv(workspace.EnvPrivateKey)
	if raw == "" {
		raw = env.Getenv(workspace.EnvNostrPrivateKey) // handed over in NOSTR_PRIVATE_KEY_FILE
	}
	sk, err := nostrkey.ParseSecret(raw)
	if err != nil {
		return mediaAuth{}
	}
	return mediaAuth{host: strings.ToLower(u.Hostname()), port: port, secret: sk, authTag: strings.TrimSpace(env.Getenv(workspace.EnvAuthTag))}
}

// effectivePort is the URL's port, or its scheme's default (ws like http,
// wss like https); "" for other schemes.
func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	}
	return ""
}

// matches reports whether u is a media URL of the relay itself: http(s),
// same host, same effective port, path under /media/. Nothing else may ever
// receive the token.
func (m *mediaAuth) matches(u *url.URL) bool {
	if m.host == "" || m.secret == nil {
		return false
	}
	s := strings.ToLower(u.Scheme)
	if s != "http" && s != "https" {
		return false
	}
	return strings.EqualFold(u.Hostname(), m.host) && effectivePort(u) == m.port && strings.HasPrefix(u.Path, mediaPathPrefix)
}

// authorize adds the Authorization header to req when its URL is the
// relay's media; it reports whether it did. Failures leave req unsigned.
func (m *mediaAuth) authorize(req *http.Request) bool {
	if !m.matches(req.URL) {
		return false
	}
	server := strings.ToLower(req.URL.Hostname())
	if p := req.URL.Port(); p != "" && p != defaultPortFor(req.URL.Scheme) {
		server += ":" + p
	}
	evt := nostr.Event{
		Kind:      workspace.KindMediaAuth,
		CreatedAt: nostr.Now(),
		Content:   mediaTokenContent,
		Tags: nostr.Tags{
			{"t", "get"},
			{"expiration", strconv.FormatInt(time.Now().Add(mediaTokenLifetime).Unix(), 10)},
			{"server", server},
		},
	}
	if err := m.secret.SignEvent(&evt); err != nil {
		return false
	}
	raw, err := json.Marshal(evt)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", nip98.Scheme+" "+base64.RawURLEncoding.EncodeToString(raw))
	if m.authTag != "" {
		req.Header.Set(workspace.HeaderAuthTag, m.authTag)
	}
	return true
}

func defaultPortFor(scheme string) string {
	if strings.EqualFold(scheme, "https") {
		return "443"
	}
	return "80"
}
