// Package caroots gives HTTPS a root certificate pool where the system has
// none, as in a scratch container with no /etc/ssl.
//
// It does not replace the system's roots: Go consults the fallback only when
// the platform supplies no roots at all. Parsing the bundle costs a few
// milliseconds, so Install skips it when the system visibly has roots, and
// identities that never speak HTTPS (rg, tree, the git helpers) never call
// it.
package caroots

import (
	"crypto/x509"
	"os"
	"runtime"
	"sync"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// certFiles and certDirs are where crypto/x509 looks for roots on Linux
// and the BSDs (root_linux.go, root_bsd.go); any one present means Go will
// find system roots and never consult the fallback.
var (
	certFiles = []string{
		"/etc/ssl/certs/ca-certificates.crt",
		"/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/ca-bundle.pem",
		"/etc/pki/tls/cacert.pem",
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
		"/etc/ssl/cert.pem",
		"/usr/local/etc/ssl/cert.pem",
		"/usr/local/share/certs/ca-root-nss.crt",
	}
	certDirs = []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}
)

var install = sync.OnceValue(func() error {
	p := x509.NewCertPool()
	for r := range bundle.Roots() {
		cert, err := x509.ParseCertificate(r.Certificate)
		if err != nil {
			return err
		}
		if r.Constraint == nil {
			p.AddCert(cert)
		} else {
			p.AddCertWithConstraint(cert, r.Constraint)
		}
	}
	x509.SetFallbackRoots(p)
	return nil
})

// Install registers the embedded Mozilla root bundle as the fallback roots
// unless the system has roots of its own. Call it at the start of an
// identity that makes HTTPS requests, before the first one, with the
// identity's environment lookup. Later calls do nothing more.
func Install(getenv func(string) string) error {
	if systemRoots(getenv) {
		return nil
	}
	return install()
}

// systemRoots reports whether crypto/x509 will find roots without the
// fallback: the platform verifier (macOS, Windows, iOS), SSL_CERT_FILE or
// SSL_CERT_DIR, or a non-empty file from the usual locations.
func systemRoots(getenv func(string) string) bool {
	switch runtime.GOOS {
	case "darwin", "ios", "windows":
		return true
	}
	if getenv("SSL_CERT_FILE") != "" || getenv("SSL_CERT_DIR") != "" {
		return true
	}
	for _, f := range certFiles {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			return true
		}
	}
	for _, d := range certDirs {
		if ents, err := os.ReadDir(d); err == nil && len(ents) > 0 {
			return true
		}
	}
	return false
}
