package up

import (
	"os"
	"testing"

	"buzzbox/internal/leakcheck"
	"buzzbox/internal/testexe"
)

// TestMain fails the run when goroutines outlive the tests, and removes
// the executable testexe built for them.
func TestMain(m *testing.M) { os.Exit(testexe.RunTests(m, leakcheck.AfterAll)) }

// waitFor polls what another process writes; see testexe.WaitFor.
var waitFor = testexe.WaitFor
