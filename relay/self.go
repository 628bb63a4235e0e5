package relay

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// selfNames is what the relay calls itself: the scheme and host names that
// the relay tag of a NIP-42 AUTH event and the u tag of a NIP-98 token must
// use. They come from --public-url when it is set, else from the listen
// address; never from a request's Host or X-Forwarded-* headers, which the
// client chooses (a token minted for another server would pass).
type selfNames struct {
	secure bool     // wss:// (and https://) rather than ws:// (http://)
	hosts  []string // host[:port] as normHost spells it; hosts[0] is the primary
}

// publicNames reads --public-url: the primary URL, then any others. Each
// is ws://, wss://, http:// or https://, a host, an optional port, no user
// info, query or fragment, and all are secure or none. A path is ignored,
// as the relay serves its routes at the root.
func publicNames(primary string, others ...string) (selfNames, error) {
	var n selfNames
	for i, raw := range append([]string{primary}, others...) {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			return selfNames{}, fmt.Errorf("buzz-relay: public URL %q: %w", raw, err)
		}
		var secure bool
		switch strings.ToLower(u.Scheme) {
		case "ws", "http":
		case "wss", "https":
			secure = true
		default:
			return selfNames{}, fmt.Errorf("buzz-relay: public URL %q: scheme must be ws://, wss://, http:// or https://", raw)
		}
		if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || !validHost(u.Hostname(), u.Port()) {
			return selfNames{}, fmt.Errorf("buzz-relay: public URL %q: want scheme://host[:port] with no user, query or fragment", raw)
		}
		if i == 0 {
			n.secure = secure
		} else if secure != n.secure {
			return selfNames{}, fmt.Errorf("buzz-relay: public URL %q: all public URLs must be secure (wss://, https://) or none, like %q", raw, primary)
		}
		n.hosts = append(n.hosts, normHost(u.Host))
	}
	return n, nil
}

// listenNames derives the names from the address the relay listens on. A
// specific address is its only name (the loopback spellings localhost,
// 127.0.0.1 and ::1 are one). A wildcard address (0.0.0.0, ::) answers to
// the loopback names, the wildcard literal itself and every address of the
// host's interfaces, each with the listening port; wildcard is then true so
// that the caller can advise --public-url for any other name (a DNS name,
// a proxy's address).
func listenNames(addr net.Addr) (names selfNames, wildcard bool) {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return selfNames{hosts: []string{normHost(addr.String())}}, false
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsUnspecified() {
		return selfNames{hosts: []string{normHost(addr.String())}}, false
	}
	seen := map[string]bool{}
	add := func(h string) {
		h = normHost(net.JoinHostPort(h, port))
		if !seen[h] {
			seen[h] = true
			names.hosts = append(names.hosts, h)
		}
	}
	add("127.0.0.1")
	add(host)
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.IsLinkLocalUnicast() || n.IP.IsLinkLocalMulticast() {
				continue // link-local addresses need a zone; no client names them
			}
			add(n.IP.String())
		}
	}
	return names, true
}

// bases returns scheme://host for each name, the primary first.
func (n selfNames) bases(scheme string) []string {
	out := make([]string, len(n.hosts))
	for i, h := range n.hosts {
		out[i] = scheme + "://" + h
	}
	return out
}

// validHost reports whether host is an IP address or a DNS name (letters,
// digits, '.', '-', '_') and port is empty or 1 to 65535.
func validHost(host, port string) bool {
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return false
		}
	}
	if host == "" || net.ParseIP(host) != nil {
		return host != ""
	}
	for _, c := range host {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
