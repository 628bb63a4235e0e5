package caroots

import (
	"crypto/x509"
	"os"
	"runtime"
	"testing"
)

func TestInstallIsIdempotent(t *testing.T) {
	if err := install(); err != nil {
		t.Fatalf("install() = %v", err)
	}
	// SetFallbackRoots panics on a second call; install must not make one.
	if err := install(); err != nil {
		t.Fatalf("second install() = %v", err)
	}
	if err := Install(func(string) string { return "" }); err != nil {
		t.Fatalf("Install after install = %v", err)
	}
	if _, err := x509.SystemCertPool(); err != nil {
		t.Fatalf("SystemCertPool after Install: %v", err)
	}
}

func TestSystemRoots(t *testing.T) {
	env := func(m map[string]string) func(string) string {
		return func(k string) string { return m[k] }
	}
	if !systemRoots(env(map[string]string{"SSL_CERT_FILE": "/some/roots.pem"})) {
		t.Error("SSL_CERT_FILE set: want system roots")
	}
	if !systemRoots(env(map[string]string{"SSL_CERT_DIR": "/some/dir"})) {
		t.Error("SSL_CERT_DIR set: want system roots")
	}
	if runtime.GOOS != "linux" {
		return
	}
	have := false
	for _, f := range certFiles {
		if fi, err := os.Stat(f); err == nil && fi.Size() > 0 {
			have = true
		}
	}
	if got := systemRoots(env(nil)); got != have {
		t.Errorf("systemRoots = %v; a usual cert file present: %v", got, have)
	}
	// Nothing in the usual places (as in a scratch container): use the fallback.
	saveFiles, saveDirs := certFiles, certDirs
	defer func() { certFiles, certDirs = saveFiles, saveDirs }()
	dir := t.TempDir()
	certFiles, certDirs = []string{dir + "/missing.crt"}, []string{dir + "/missing"}
	if systemRoots(env(nil)) {
		t.Error("no cert files or dirs: want no system roots")
	}
	if err := os.WriteFile(dir+"/missing.crt", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if systemRoots(env(nil)) {
		t.Error("an empty cert file counts as roots")
	}
}
