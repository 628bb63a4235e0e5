package shimtools

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSyncToolsStayLight checks that rg and tree, which start for every
// search an agent types, link no network, Nostr or logging code (STYLE
// §2.1: each forbidden import with its reason).
func TestSyncToolsStayLight(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("SKIP(loud): go tool not on PATH; cannot list dependencies")
	}
	forbidden := map[string]string{
		"net":                         "rg and tree never touch the network",
		"net/http":                    "rg and tree never touch the network",
		"crypto/tls":                  "rg and tree never touch the network",
		"log":                         "sync tools write plain diagnostics, no logger",
		"log/slog":                    "sync tools write plain diagnostics, no logger",
		"github.com/nbd-wtf/go-nostr": "Nostr belongs to the shim and git helpers, not to search",
		"buzzbox/internal/nostrkey":   "Nostr belongs to the shim and git helpers, not to search",
		"github.com/fiatjaf/khatru":   "relay code has no place in rg/tree",
		"github.com/modelcontextprotocol/go-sdk/mcp": "MCP has no place in rg/tree",
	}
	for _, pkg := range []string{"buzzbox/shimtools/rg", "buzzbox/shimtools/tree"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if why, bad := forbidden[dep]; bad {
				t.Errorf("%s imports %s: %s", pkg, dep, why)
			}
		}
	}
}
