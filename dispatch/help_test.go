package dispatch

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
)

// helpEnv lists, per command line, environment variables its --help must
// name because the tool reads them.
func helpEnv() map[string][]string {
	return map[string][]string{
		"buzz-agent":           {"BUZZ_AGENT_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_COMPAT_API_KEY", "OPENROUTER_API_KEY", "DATABRICKS_HOST", "BUZZ_AGENT_MAX_ROUNDS", "BUZZ_AGENT_LOG_LEVEL", "BUZZ_AGENT_STATE_DIR"},
		"buzz-acp":             {"BUZZ_RELAY_URL", "BUZZ_PRIVATE_KEY", "BUZZ_ACP_AGENT_COMMAND", "BUZZ_ACP_AGENT_OWNER", "BUZZ_ACP_LOG_LEVEL", "BUZZ_AUTH_TAG", "BUZZ_ACP_EVENT_BUFFER", "CODEX_CONFIG"},
		"buzz-dev-mcp":         {"BUZZ_SHELL", "BUZZ_DEV_MCP_LOG", "NOSTR_PRIVATE_KEY_FILE", "BUZZ_SHELL_SANDBOX", "BUZZ_RELAY_URL", "BUZZ_AUTH_TAG"},
		"buzz":                 {"BUZZ_RELAY_URL", "BUZZ_PRIVATE_KEY", "BUZZ_KEYFILE", "BUZZ_AUTH_TAG", "BUZZ_TIMEOUT_SECS", "BUZZ_CONNECT_TIMEOUT_SECS"},
		"git-credential-nostr": {"NOSTR_PRIVATE_KEY", "BUZZ_PRIVATE_KEY", "BUZZ_AUTH_TAG"},
		"git-sign-nostr":       {"NOSTR_PRIVATE_KEY", "BUZZ_PRIVATE_KEY", "BUZZ_AUTH_TAG"},
		"buzzbox up":           {"BUZZ_AGENT_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_COMPAT_API_KEY", "BUZZ_AGENT_MODEL", "XDG_STATE_HOME"},
		"buzz-acp models":      {"BUZZ_ACP_AGENT_COMMAND", "BUZZ_ACP_AGENT_ARGS"},
		"rg":                   {"BUZZBOX_SHIM_PASSTHROUGH"},
		"tree":                 {"BUZZBOX_SHIM_PASSTHROUGH"},
	}
}

// ownFormat are the tools whose help copies another program's, which tests
// compare them against: their text is left as it is.
func ownFormat(line string) bool { return line == "rg" || line == "tree" }

// helpRun runs the built binary as words[0] (a link of that name, or
// buzzbox itself) with the rest of words, in an empty environment.
func helpRun(t *testing.T, words ...string) (stdout, stderr string, code int) {
	t.Helper()
	exe := testexe.Path(t)
	if words[0] != "buzzbox" {
		exe = testexe.Link(t, words[0])
	}
	cmd := exec.Command(exe, words[1:]...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/nonexistent"}
	return testexe.Run(t, cmd)
}

// buzzCommands reads the buzz command list from `buzz --help`.
func buzzCommands(t *testing.T, overview string) []string {
	t.Helper()
	_, list, ok := strings.Cut(overview, "\nCommands:\n")
	if !ok {
		t.Fatalf("buzz --help has no Commands: section:\n%s", overview)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	var cmds []string
	for _, l := range strings.Split(list, "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(l), "   ")
		cmds = append(cmds, strings.TrimSpace(name))
	}
	if len(cmds) < 10 {
		t.Fatalf("buzz --help lists %d commands: %q", len(cmds), cmds)
	}
	return cmds
}

// TestHelpOfEveryToolOnStdout runs --help of every identity of the table,
// of buzzbox itself, up and install, of buzz's groups and commands, as real
// processes: each prints on stdout and nothing on stderr, exits 0, spells
// flags --name, shows an example and names the environment it reads. rg
// and tree keep ripgrep's and GNU tree's own text.
func TestHelpOfEveryToolOnStdout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	lines := [][]string{{"buzzbox"}, {"buzzbox", "--help"}, {"buzzbox", "up", "--help"}, {"buzzbox", "install", "--help"},
		{"buzz-acp", "models", "--help"}}
	for _, id := range Identities() {
		lines = append(lines, []string{id.Name, "--help"})
	}
	buzz, _, _ := helpRun(t, "buzz", "--help")
	groups := map[string]bool{}
	for _, c := range buzzCommands(t, buzz) {
		words := strings.Fields(c)
		lines = append(lines, append(append([]string{"buzz"}, words...), "--help"))
		if len(words) == 2 && !groups[words[0]] {
			groups[words[0]] = true
			lines = append(lines, []string{"buzz", words[0], "--help"})
		}
	}
	env := helpEnv()
	// A flag listed Go-style, "  -listen", rather than "--listen"; short
	// flags ("-L level", "-A, --after-context") pass.
	singleDashLong := regexp.MustCompile(`(?m)^\s+-[A-Za-z][A-Za-z0-9_-]+\b`)
	for _, words := range lines {
		name := strings.Join(words[:len(words)-1], " ")
		if len(words) == 1 {
			name = words[0]
		}
		t.Run(strings.Join(words, "_"), func(t *testing.T) {
			stdout, stderr, code := helpRun(t, words...)
			if code != 0 || stderr != "" || strings.TrimSpace(stdout) == "" {
				t.Fatalf("%s = exit %d, stderr %q, %d bytes on stdout; want exit 0, help on stdout, nothing on stderr",
					strings.Join(words, " "), code, stderr, len(stdout))
			}
			if m := singleDashLong.FindString(stdout); m != "" {
				t.Errorf("%s lists a flag with one dash, %q:\n%s", strings.Join(words, " "), strings.TrimSpace(m), stdout)
			}
			for _, v := range env[name] {
				if !strings.Contains(stdout, v) {
					t.Errorf("%s does not name %s, which it reads", strings.Join(words, " "), v)
				}
			}
			if ownFormat(name) {
				return
			}
			if !strings.Contains(stdout, "\nExample:\n") {
				t.Errorf("%s has no Example: section:\n%s", strings.Join(words, " "), stdout)
			}
		})
	}
	bare, _, _ := helpRun(t, "buzzbox")
	help, _, _ := helpRun(t, "buzzbox", "--help")
	if bare != help {
		t.Errorf("bare buzzbox printed\n%s\nwant what buzzbox --help prints:\n%s", bare, help)
	}
}

// TestBadFlagIsOneLineAndAHint gives every identity a flag it does not
// have: nothing on stdout, and on stderr one line naming the flag and a
// hint to run --help, exit 2. The exceptions keep their own contracts: buzz
// answers with one JSON error line, exit 1 (nostrgit-cli.md §6.1); git's helpers
// speak git's (git-sign-nostr: one error: line, exit 1; the credential
// helper ignores actions it does not know); rg answers as ripgrep does.
// (The built-in rg and tree run: PATH holds no real ones.)
func TestBadFlagIsOneLineAndAHint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	const bad = "--definitely-not-a-flag"
	lines := [][]string{{"buzzbox", "up", bad}, {"buzzbox", "install", bad}}
	for _, id := range Identities() {
		lines = append(lines, []string{id.Name, bad})
	}
	for _, words := range lines {
		t.Run(strings.Join(words, "_"), func(t *testing.T) {
			stdout, stderr, code := helpRun(t, words...)
			if stdout != "" {
				t.Errorf("%s wrote to stdout: %q", strings.Join(words, " "), stdout)
			}
			errLines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			switch name := words[0]; name {
			case "rg":
				if code != 2 || !strings.Contains(stderr, bad) {
					t.Errorf("rg %s = %d, %q; want ripgrep's exit 2 naming the flag", bad, code, stderr)
				}
			case "tree":
				if code != 2 || len(errLines) != 1 || !strings.Contains(stderr, bad) || !strings.Contains(stderr, "tree --help") {
					t.Errorf("tree %s = %d, %q; want one line naming the flag and tree --help, exit 2", bad, code, stderr)
				}
			case "git-credential-nostr":
				if code != 0 || stderr != "" {
					t.Errorf("git-credential-nostr %s = %d, %q; want git's silent exit 0 for an unknown action", bad, code, stderr)
				}
			case "git-sign-nostr":
				if code != 1 || len(errLines) != 1 || !strings.HasPrefix(stderr, "error: ") {
					t.Errorf("git-sign-nostr %s = %d, %q; want one error: line, exit 1", bad, code, stderr)
				}
			case "buzz":
				if code != 1 || len(errLines) != 1 || !strings.Contains(stderr, bad) || !strings.Contains(stderr, "buzz --help") {
					t.Errorf("buzz %s = %d, %q; want one JSON error line naming the flag and buzz --help, exit 1", bad, code, stderr)
				}
			default:
				cmdName := strings.Join(words[:len(words)-1], " ")
				if words[0] == "buzzbox" {
					cmdName = strings.Join(words[:2], " ")
				}
				if code != 2 || len(errLines) != 2 || !strings.Contains(errLines[0], bad) ||
					!strings.HasPrefix(errLines[1], "hint: ") || !strings.Contains(errLines[1], cmdName+" --help") {
					t.Errorf("%s = %d, stderr %q; want exit 2, one line naming %s, then a hint to run %s --help", strings.Join(words, " "), code, stderr, bad, cmdName)
				}
			}
		})
	}
}
