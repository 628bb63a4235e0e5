package agent

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance)
// tests a client by starting a scenario server and running a command with
// the server's URL as its last argument. That command is this test binary
// again, running TestMCPConformanceAdapterMode: it starts the built
// buzz-agent, opens one ACP session whose mcpServers names the scenario
// server, and prompts it with a fake LLM scripted to call the scenario's
// tool. The adapter writes what the tool returned to the file
// conformanceVerdictVar names, so the outer test can tell a client that
// never finished the call from one the suite's checks fault.
const (
	conformanceAdapterVar = "BUZZ_MCP_CONFORMANCE_ADAPTER"
	conformanceVerdictVar = "BUZZ_MCP_CONFORMANCE_VERDICT"
)

// conformanceTools is the tool each scenario's server offers and the
// arguments the scripted model calls it with; scenarios absent here only
// need the session's handshake.
var conformanceTools = map[string]llmtest.Call{
	"tools_call":                          {ID: "c", Name: "conf__add_numbers", Args: `{"a":2,"b":3}`},
	"sse-retry":                           {ID: "c", Name: "conf__test_reconnection"},
	"elicitation-sep1034-client-defaults": {ID: "c", Name: "conf__test_client_elicitation_defaults"},
}

// conformanceScenario is one client scenario of the suite and what this
// client is expected to make of it.
type conformanceScenario struct {
	name string
	// failing lists check ids the suite is expected to fail, with why.
	failing map[string]string
	// result, when set, must appear in the tool result the model got back.
	result string
	// tokens: the agent must have stored an OAuth token (mode 0600).
	tokens bool
}

var conformanceScenarios = []conformanceScenario{
	{name: "initialize"},
	{name: "tools_call", result: "The sum of 2 and 3 is 5"},
	{name: "sse-retry", result: "Reconnection test completed successfully"},
	// buzz-agent offers no elicitation capability: the server's
	// elicitation/create is refused with -32601 at once, so the tool call
	// ends promptly with the server's error text instead of hanging, and
	// the checks that want an accepted elicitation fail.
	// A pre-registered client with the client credentials grant, the OAuth
	// flow that needs no person, authenticated by secret or signed JWT.
	{name: "auth/client-credentials-basic", result: "test", tokens: true},
	{name: "auth/client-credentials-jwt", result: "test", tokens: true},
	{name: "elicitation-sep1034-client-defaults", result: "-32601", failing: map[string]string{
		"client-elicitation-sep1034-general":         "no elicitation support",
		"client-elicitation-sep1034-string-default":  "no elicitation support",
		"client-elicitation-sep1034-integer-default": "no elicitation support",
		"client-elicitation-sep1034-number-default":  "no elicitation support",
		"client-elicitation-sep1034-enum-default":    "no elicitation support",
		"client-elicitation-sep1034-boolean-default": "no elicitation support",
	}},
}

// TestMCPConformanceClient runs the official MCP conformance suite's
// client scenarios against buzz-agent's MCP client, one ACP session each.
func TestMCPConformanceClient(t *testing.T) {
	dir, node := testexe.NodeModulesAtLeast(t, 22)
	suite := filepath.Join(dir, "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		t.Skipf("SKIP(loud): %s missing; run scripts/test.sh (npm install in scripts/node)", suite)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := testexe.Path(t)
	for _, sc := range conformanceScenarios {
		t.Run(sc.name, func(t *testing.T) {
			out := t.TempDir()
			verdict := filepath.Join(out, "verdict.json")
			// The suite splits the command at spaces and runs it with a shell.
			command := self + " -test.run=TestMCPConformanceAdapterMode -test.v"
			cmd := exec.Command(node, suite, "client", "--command", command, "--scenario", sc.name, "--timeout", "60000", "-o", out)
			cmd.Env = append(os.Environ(), conformanceAdapterVar+"=1", conformanceVerdictVar+"="+verdict, "BUZZBOX_TEST_EXE="+exe)
			cmd.Dir = out
			stdout, stderr, code := testexe.Run(t, cmd)
			report := func() string {
				return fmt.Sprintf("suite exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			files, _ := filepath.Glob(filepath.Join(out, sc.name+"-*", "checks.json"))
			if len(files) != 1 {
				t.Fatalf("no checks.json from the suite\n%s", report())
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var checks []struct {
				ID, Status, Description, ErrorMessage string
			}
			if err := json.Unmarshal(b, &checks); err != nil {
				t.Fatalf("checks.json: %v", err)
			}
			passed := 0
			for _, c := range checks {
				_, expected := sc.failing[c.ID]
				switch {
				case c.Status == "FAILURE" && !expected:
					t.Errorf("check %s failed: %s %s", c.ID, c.Description, c.ErrorMessage)
				case c.Status == "SUCCESS" && expected:
					t.Errorf("check %s passes now; drop it from the expected failures", c.ID)
				case c.Status == "SUCCESS":
					passed++
				}
			}
			if passed == 0 && len(sc.failing) == 0 {
				t.Errorf("no check passed")
			}
			v, err := os.ReadFile(verdict)
			if err != nil {
				t.Fatalf("the adapter did not finish its session: %v\n%s", err, report())
			}
			if sc.result != "" && !strings.Contains(string(v), sc.result) {
				t.Errorf("tool result = %s; want it to contain %q", v, sc.result)
			}
			if sc.tokens && !strings.Contains(string(v), `"tokens":1`) {
				t.Errorf("verdict = %s; want one stored token", v)
			}
			if t.Failed() {
				t.Log(report())
			}
		})
	}
}

// TestMCPConformanceAdapterMode is the client command the conformance
// suite runs (see TestMCPConformanceClient); on its own it skips.
func TestMCPConformanceAdapterMode(t *testing.T) {
	if os.Getenv(conformanceAdapterVar) != "1" {
		t.Skip("runs only as the MCP conformance suite's client command")
	}
	if flag.NArg() == 0 {
		t.Fatal("no scenario server URL after the flags")
	}
	url := flag.Arg(flag.NArg() - 1)
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var script []llmtest.Reply
	call, hasTool := conformanceTools[scenario]
	if strings.HasPrefix(scenario, "auth/") {
		call, hasTool = llmtest.Call{ID: "c", Name: "conf__test-tool"}, true
	}
	state := t.TempDir()
	if ctx := os.Getenv("MCP_CONFORMANCE_CONTEXT"); ctx != "" {
		// The scenario's pre-registered client, where the agent looks for it.
		var cc struct {
			ClientID     string `json:"client_id"`
			ClientSecret string `json:"client_secret"`
			PrivateKey   string `json:"private_key_pem"`
		}
		if err := json.Unmarshal([]byte(ctx), &cc); err != nil {
			t.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
		client := map[string]string{"client_id": cc.ClientID, "client_secret": cc.ClientSecret}
		if err := os.MkdirAll(filepath.Join(state, "mcp-oauth"), 0o700); err != nil {
			t.Fatal(err)
		}
		if cc.PrivateKey != "" {
			if err := os.WriteFile(filepath.Join(state, "mcp-oauth", "client.pem"), []byte(cc.PrivateKey), 0o600); err != nil {
				t.Fatal(err)
			}
			client = map[string]string{"client_id": cc.ClientID, "private_key_file": "client.pem"}
		}
		b, _ := json.Marshal(map[string]any{url: client})
		if err := os.WriteFile(filepath.Join(state, "mcp-oauth", "clients.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if hasTool {
		script = append(script, llmtest.Reply{Calls: []llmtest.Call{call}})
	}
	srv := llmtest.New(t, append(script, llmtest.Reply{Text: "done"})...)
	c := startAgentExe(t, srv, "BUZZ_AGENT_STATE_DIR="+state)
	c.init()
	sid := c.newSession(map[string]any{"type": "http", "name": "conf", "url": url, "headers": []any{}})
	got := map[string]any{"scenario": scenario}
	if fi, err := os.Stat(filepath.Join(state, "mcp-oauth", "tokens")); err == nil {
		// Tokens are secrets: the agent keeps them to itself.
		ents, _ := os.ReadDir(filepath.Join(state, "mcp-oauth", "tokens"))
		for _, e := range ents {
			if info, err := e.Info(); err == nil && info.Mode().Perm() != 0o600 {
				t.Errorf("token file %s has mode %04o; want 0600", e.Name(), info.Mode().Perm())
			}
		}
		got["tokens"] = len(ents)
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("tokens dir mode %04o; want 0700", fi.Mode().Perm())
		}
	}
	if hasTool {
		if stop := c.prompt(sid, "call the tool"); stop != "end_turn" {
			t.Fatalf("stop = %s", stop)
		}
		ups := c.updates("tool_call_update")
		if len(ups) == 0 {
			t.Fatal("no tool_call_update")
		}
		last := ups[len(ups)-1]
		got["status"] = last["status"]
		got["rawOutput"] = last["rawOutput"]
		msgs := messages(t, srv, 1)
		got["result"] = msgs[len(msgs)-1]["content"]
		if last["status"] != "completed" {
			t.Errorf("tool call ended %v: %v", last["status"], last["rawOutput"])
		}
	}
	if t.Failed() {
		return
	}
	b, _ := json.Marshal(got)
	if err := os.WriteFile(os.Getenv(conformanceVerdictVar), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
