package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// A workflow's call_webhook step reaches only the hosts the operator
// listed (--workflow-http-allow), checked on the URL and after every
// redirect; and the address the name resolved to is checked when the
// connection is made: never loopback, link-local, private or unspecified
// unless that exact address is listed.

const (
	// maxHTTPResponse bounds the response body kept as the step's output.
	maxHTTPResponse = 16 << 10
	// maxHTTPRedirects bounds the redirects one call follows.
	maxHTTPRedirects = 5
)

// hostAllowed reports whether u's host (with or without its port) is
// listed.
func (r *Relay) hostAllowed(u *url.URL) bool {
	host, hostPort := strings.ToLower(u.Hostname()), strings.ToLower(u.Host)
	for _, a := range r.cfg.WorkflowHTTPAllow {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == host || a == hostPort {
			return true
		}
	}
	return false
}

// addrListed reports whether the address itself is listed: the IP
// alone, or the IP with this port.
func (r *Relay) addrListed(ap netip.AddrPort) bool {
	ip := ap.Addr().Unmap()
	for _, a := range r.cfg.WorkflowHTTPAllow {
		a = strings.TrimSpace(a)
		if l, err := netip.ParseAddrPort(a); err == nil {
			if l.Addr().Unmap() == ip && l.Port() == ap.Port() {
				return true
			}
			continue
		}
		if l, err := netip.ParseAddr(strings.Trim(a, "[]")); err == nil && l.Unmap() == ip {
			return true
		}
	}
	return false
}

func internalAddr(ip netip.Addr) bool {
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast()
}

func (r *Relay) callWebhook(ctx context.Context, method, raw, body string, timeout time.Duration) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("call_webhook: %q is not an http(s) URL", raw)
	}
	if !r.hostAllowed(u) {
		return "", fmt.Errorf("call_webhook: host %s is not in --workflow-http-allow", u.Host)
	}
	dialer := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("call_webhook: address %s: %w", address, err)
		}
		if internalAddr(ap.Addr().Unmap()) && !r.addrListed(ap) {
			return fmt.Errorf("call_webhook: %s is an internal address and not listed itself in --workflow-http-allow", ap)
		}
		return nil
	}}
	client := &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: nil, TLSHandshakeTimeout: timeout},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxHTTPRedirects {
				return fmt.Errorf("call_webhook: more than %d redirects", maxHTTPRedirects)
			}
			if !r.hostAllowed(req.URL) {
				return fmt.Errorf("call_webhook: redirect to %s, which is not in --workflow-http-allow", req.URL.Host)
			}
			return nil
		},
	}
	var rd io.Reader
	if method == http.MethodPost {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return "", fmt.Errorf("call_webhook: %w", err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxHTTPResponse))
	if res.StatusCode >= 300 {
		return "", errors.New("call_webhook: " + res.Status)
	}
	return string(b), nil
}
