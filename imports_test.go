package main

import (
	"os/exec"
	"strings"
	"testing"
)

// identityRoots are the identity packages, each with its subpackages (a
// package belongs to the longest root its path falls under); one may
// import another only along the arrows docs/README.md draws, listed in
// allowedArrows.
var identityRoots = []string{"agent", "harness", "cli", "devmcp", "shimtools", "nostrgit", "relay"}

// allowedArrows lists, per identity root, the packages of other
// identities it may import, each with the reason: exactly the arrows of
// docs/README.md (TestArrowsMatchDocs).
var allowedArrows = map[string][]string{
	"buzzbox/devmcp": {
		"buzzbox/shimtools/shim", // the session shim
	},
}

// forbiddenDeps lists, per package prefix, packages that must not be among
// its transitive dependencies, with the reason.
var forbiddenDeps = map[string]map[string]string{
	"buzzbox/shimtools/rg": {
		"net/http":                    "rg and tree are synchronous tools with no network",
		"log/slog":                    "the synchronous tools write plain diagnostics, no logger",
		"github.com/nbd-wtf/go-nostr": "rg and tree know nothing of Nostr",
	},
	"buzzbox/shimtools/rustregex": {
		"net":      "rg's pattern translator is text to text",
		"log/slog": "the synchronous tools write plain diagnostics, no logger",
	},
	"buzzbox/shimtools/tree": {
		"net/http":                    "rg and tree are synchronous tools with no network",
		"log/slog":                    "the synchronous tools write plain diagnostics, no logger",
		"github.com/nbd-wtf/go-nostr": "rg and tree know nothing of Nostr",
	},
	"buzzbox/internal/jsonrpc": {
		"github.com/nbd-wtf/go-nostr": "the JSON-RPC core is protocol plumbing only",
	},
}

// stdlibOnly lists packages whose dependencies must all be in the standard
// library, with the reason.
var stdlibOnly = map[string]string{
	"buzzbox/internal/mcp":        "MCP's wire types are data shapes only, shared by server and client",
	"buzzbox/internal/workspace":  "the workspace vocabulary is names and pure functions, imported by every identity and by internal/nostrkey",
	"buzzbox/shimtools/rustregex": "the pattern translator is text to text: rg's parser, free of network, logging and Nostr",
}

// isStdlib reports whether an import path is the standard library's: its
// first element has no dot and it is not this module's.
func isStdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".") && first != "buzzbox"
}

// identityOf returns the identity root pkg belongs to, the longest that
// matches, or "" for a package of no identity.
func identityOf(pkg string) string {
	best := ""
	for _, r := range identityRoots {
		if (pkg == "buzzbox/"+r || strings.HasPrefix(pkg, "buzzbox/"+r+"/")) && len(r) > len(best) {
			best = r
		}
	}
	return best
}

// TestImportRules holds the package map of DESIGN.md: identity packages do
// not reach sideways into each other, and the light packages stay light.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}|{{join .Deps \",\"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 {
			continue
		}
		pkg, imports, deps := parts[0], strings.Split(parts[1], ","), strings.Split(parts[2], ",")
		from := identityOf(pkg)
		if from != "" {
			for _, imp := range imports {
				to := identityOf(imp)
				if to == "" || to == from || allowed(pkg, imp) {
					continue
				}
				t.Errorf("%s imports %s: identity packages import each other only along DESIGN.md's arrows", pkg, imp)
			}
		}
		if reason, ok := stdlibOnly[pkg]; ok {
			for _, d := range deps {
				if d != "" && !isStdlib(d) {
					t.Errorf("%s depends on %s: %s", pkg, d, reason)
				}
			}
		}
		for prefix, bad := range forbiddenDeps {
			if pkg != prefix && !strings.HasPrefix(pkg, prefix+"/") {
				continue
			}
			for _, d := range deps {
				if reason, ok := bad[d]; ok {
					t.Errorf("%s depends on %s: %s", pkg, d, reason)
				}
			}
		}
	}
}

// allowed reports whether pkg may import imp of another identity.
func allowed(pkg, imp string) bool {
	for _, target := range allowedArrows["buzzbox/"+identityOf(pkg)] {
		if imp == target || strings.HasPrefix(imp, target+"/") {
			return true
		}
	}
	return false
}
