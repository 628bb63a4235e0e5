// Package caroots gives HTTPS a root certificate pool where the system has
// none, as in a scratch container with no /etc/ssl.
//
// It does not replace the system's roots: Go consults the fallback only when
// the platform supplies no roots at all. The bundle is parsed when Install is
// first called, not at program start, so identities that never speak HTTPS
// (rg, tree, the git helpers) pay nothing for it.
package caroots

import (
	"crypto/x509"
	"sync"

	"golang.org/x/crypto/x509roots/fallback/bundle"
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

// Install registers the embedded Mozilla root bundle as the fallback roots.
// Call it at the start of an identity that makes HTTPS requests, before the
// first one. Later calls do nothing and return the first call's result.
func Install() error { return install() }
