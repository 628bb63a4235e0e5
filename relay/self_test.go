package relay

import (
	"bytes"
	"net"
	"slices"
	"strings"
	"testing"

	"buzzbox/internal/proc"
)

// TestPublicURLRefused: a --public-url the relay could not be named by is
// refused at start with the reason, not taken as a name no token matches.
func TestPublicURLRefused(t *testing.T) {
	owner := newKey(t)
	for _, tc := range []struct {
		urls []string
		want string
	}{
		{[]string{"relay.example"}, "scheme must be"},
		{[]string{"ftp://relay.example"}, "scheme must be"},
		{[]string{"wss://"}, "want scheme://host"},
		{[]string{"wss://user@relay.example"}, "no user"},
		{[]string{"wss://relay.example?x=1"}, "no user, query"},
		{[]string{"wss://relay.example", "ws://10.0.0.5:3000"}, "secure"},
	} {
		args := []string{"--owner", owner.pk, "--data", t.TempDir(), "--listen", "127.0.0.1:0"}
		for _, u := range tc.urls {
			args = append(args, "--public-url", u)
		}
		var stderr bytes.Buffer
		code := Main(t.Context(), args, proc.Env{Stderr: &stderr, Dir: t.TempDir()})
		if code != exitError || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("buzz-relay --public-url %v = %d, stderr %q; want %d and %q", tc.urls, code, stderr.String(), exitError, tc.want)
		}
	}
	if _, err := New(Config{DataDir: t.TempDir(), Owner: owner.pk, OtherURLs: []string{"ws://10.0.0.5:3000"}}); err == nil {
		t.Error("New with OtherURLs and no PublicURL succeeded; want an error")
	}
}

// TestListenNames: a specific address is the relay's one name; a wildcard
// answers to loopback, the wildcard literal and the interface addresses.
func TestListenNames(t *testing.T) {
	n, wild := listenNames(&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 3000})
	if wild || !slices.Equal(n.hosts, []string{"10.1.2.3:3000"}) {
		t.Errorf("listenNames(10.1.2.3:3000) = %v, %v; want [10.1.2.3:3000], false", n.hosts, wild)
	}
	n, wild = listenNames(&net.TCPAddr{IP: net.ParseIP("::1"), Port: 3000})
	if wild || !slices.Equal(n.hosts, []string{"127.0.0.1:3000"}) {
		t.Errorf("listenNames([::1]:3000) = %v, %v; want [127.0.0.1:3000], false", n.hosts, wild)
	}
	n, wild = listenNames(&net.TCPAddr{IP: net.IPv4zero, Port: 3000})
	if !wild || n.hosts[0] != "127.0.0.1:3000" || !slices.Contains(n.hosts, "0.0.0.0:3000") {
		t.Errorf("listenNames(0.0.0.0:3000) = %v, %v; want loopback first, the wildcard literal, true", n.hosts, wild)
	}
	for _, h := range n.hosts {
		if !strings.HasSuffix(h, ":3000") || strings.HasPrefix(h, "[fe80") {
			t.Errorf("listenNames(0.0.0.0:3000) has %q; want every name on port 3000, no link-local ones", h)
		}
	}
}

// FuzzPublicNames: any text is refused or gives names whose primary base
// URL is a relay tag the relay accepts, while another host is refused.
func FuzzPublicNames(f *testing.F) {
	for _, s := range []string{"wss://relay.example", "ws://127.0.0.1:3000", "https://[::1]:8443/x", "ws://", "wss://a@b", "http://Relay.Example:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := publicNames(s)
		if err != nil {
			return
		}
		scheme := "ws"
		if n.secure {
			scheme = "wss"
		}
		b := n.bases(scheme)
		if len(b) != 1 {
			t.Fatalf("publicNames(%q) = %d names; want 1", s, len(b))
		}
		if !namesRelay(b[0], b) || !namesRelay(b[0]+"/", b) {
			t.Fatalf("publicNames(%q): relay tag %q refused", s, b[0])
		}
		if namesRelay(scheme+"://other.invalid", b) && n.hosts[0] != "other.invalid" {
			t.Fatalf("publicNames(%q): another host accepted", s)
		}
	})
}
