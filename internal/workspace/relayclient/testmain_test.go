package relayclient

import (
	"os"
	"testing"

	"buzzbox/internal/leakcheck"
)

// TestMain fails the run when goroutines outlive the package's tests.
func TestMain(m *testing.M) { os.Exit(leakcheck.AfterAll(m.Run())) }
