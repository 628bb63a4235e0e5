package acpclient

import (
	"os"
	"testing"

	"buzzbox/internal/leakcheck"
)

// TestMain fails the run when goroutines outlive the tests; with
// envAskAgent set the test binary is the permission-asking agent instead.
func TestMain(m *testing.M) {
	if os.Getenv(envAskAgent) != "" {
		os.Exit(askAgent())
	}
	os.Exit(leakcheck.AfterAll(m.Run()))
}
