package devmcp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// stackMarkers maps a file or directory in the working directory to the
// stack it suggests.
var stackMarkers = [...]struct{ marker, label string }{
	{"Cargo.toml", "rust (cargo)"},
	{"package.json", "node"},
	{"go.mod", "go"},
	{"pyproject.toml", "python (pyproject)"},
	{"requirements.txt", "python"},
	{"Gemfile", "ruby"},
	{"pom.xml", "java (maven)"},
	{"build.gradle", "java (gradle)"},
	{"build.gradle.kts", "kotlin (gradle)"},
}

// detectStack names the stacks whose marker files exist in dir, sorted and
// comma-separated, or "unknown".
func detectStack(dir string) string {
	var labels []string
	for _, m := range stackMarkers {
		if _, err := os.Stat(filepath.Join(dir, m.marker)); err == nil {
			labels = append(labels, m.label)
		}
	}
	if len(labels) == 0 {
		return "unknown"
	}
	slices.Sort(labels)
	return strings.Join(labels, ", ")
}

// bootstrapText is the initialize/discover instructions: where the server
// runs, what the project looks like, which shell the shell tool speaks, and
// the reminder that no state carries over between shell calls. relayHint
// adds a line about the relay CLI.
func bootstrapText(cwd string, sh shellInfo, relayHint bool) string {
	var b strings.Builder
	b.WriteString("Working directory: " + cwd + "\n")
	b.WriteString("Detected stack: " + detectStack(cwd) + "\n")
	if sh.err != nil {
		b.WriteString("Shell: none found (set " + envShell + " to override) — the shell tool is unavailable until one is installed; the file tools still work.\n")
	} else {
		b.WriteString("Shell: " + sh.name + " (set " + envShell + " to override) — write commands in " + sh.name + " syntax.\n")
	}
	b.WriteString("Each shell call is a fresh process: pass workdir on each call rather than using cd, and repeat any export you need.\n")
	if relayHint {
		b.WriteString("\nA Buzz relay is configured: `buzz --help` lists the commands for reading and posting messages.\n")
	}
	return b.String()
}
