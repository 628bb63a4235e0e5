package cli

import (
	"os"
	"testing"

	"buzzbox/internal/testexe"
)

// TestMain removes the executable testexe built for these tests.
func TestMain(m *testing.M) { os.Exit(testexe.RunTests(m)) }
