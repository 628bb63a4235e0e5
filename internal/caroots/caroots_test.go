package caroots

import (
	"crypto/x509"
	"testing"
)

func TestInstallIsIdempotent(t *testing.T) {
	if err := Install(); err != nil {
		t.Fatalf("Install() = %v", err)
	}
	// SetFallbackRoots panics on a second call; Install must not make one.
	if err := Install(); err != nil {
		t.Fatalf("second Install() = %v", err)
	}
	if _, err := x509.SystemCertPool(); err != nil {
		t.Fatalf("SystemCertPool after Install: %v", err)
	}
}
