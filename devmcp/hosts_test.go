package devmcp_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// listNames returns the tool names of a tools/list reply.
func listNames(t *testing.T, reply map[string]any) []string {
	t.Helper()
	var names []string
	for _, x := range result(t, reply)["tools"].([]any) {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	return names
}

// TestHookToolsListedToEveryClient: _Stop and _PostCompact were listed to
// every client, so Claude Code and Codex offered them to their model as
// ordinary tools. Only a client that says it runs hooks (the experimental
// capability, or buzz-agent by name) sees them; every client can call them.
func TestHookToolsListedToEveryClient(t *testing.T) {
	hooks := []string{"_PostCompact", "_Stop"}
	for _, tc := range []struct {
		name     string
		caps     map[string]any
		client   string
		wantHook bool
	}{
		{"claude-code", map[string]any{"roots": map[string]any{}}, "claude-code", false},
		{"codex", map[string]any{"elicitation": map[string]any{}}, "codex-mcp-client", false},
		{"experimental other", map[string]any{"experimental": map[string]any{"other/thing": map[string]any{}}}, "x", false},
		{"hooks capability", map[string]any{"experimental": map[string]any{"buzz/hooks": map[string]any{}}}, "some-host", true},
		{"buzz-agent by name", map[string]any{}, "buzz-agent", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startServer(t, startOpts{})
			result(t, p.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": tc.caps,
				"clientInfo": map[string]any{"name": tc.client, "version": "1"}}))
			names := listNames(t, p.call("tools/list", nil))
			for _, h := range hooks {
				if slices.Contains(names, h) != tc.wantHook {
					t.Errorf("tools/list = %v; hook %s listed %v, want %v", names, h, !tc.wantHook, tc.wantHook)
				}
			}
			if got := okText(t, p.tool("_Stop", map[string]any{})); got != "" {
				t.Errorf("_Stop call = %q; want it callable (empty: no objection)", got)
			}
		})
	}
	// The modern era carries the client's capabilities on each request.
	p := startServer(t, startOpts{})
	meta := func(caps map[string]any, name string) map[string]any {
		return map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": caps,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": name, "version": "1"},
		}}
	}
	if names := listNames(t, p.call("tools/list", meta(map[string]any{}, "claude-code"))); slices.Contains(names, "_Stop") {
		t.Errorf("modern tools/list without the capability = %v; want no hooks", names)
	}
	if names := listNames(t, p.call("tools/list", meta(map[string]any{"experimental": map[string]any{"buzz/hooks": map[string]any{}}}, "h"))); !slices.Contains(names, "_Stop") {
		t.Errorf("modern tools/list with the capability = %v; want the hooks", names)
	}
	if names := listNames(t, p.call("tools/list", meta(map[string]any{}, "buzz-agent"))); !slices.Contains(names, "_PostCompact") {
		t.Errorf("modern tools/list for buzz-agent = %v; want the hooks", names)
	}
}

// typeArrays returns the JSON pointers under v where a "type" keyword holds
// an array (a union such as ["string","null"]).
func typeArrays(v any, at string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, isArr := e.([]any); k == "type" && isArr {
				out = append(out, at+"/type")
			}
			out = append(out, typeArrays(e, at+"/"+k)...)
		}
	case []any:
		for i, e := range x {
			out = append(out, typeArrays(e, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return out
}

// TestSchemasHaveNoNullableUnions: nullable unions (["string","null"],
// ["array","null"]) drew strict-schema warnings in hosts and do not map to
// OpenAPI-style schemas. Every input and output schema of every tool,
// the hooks and workspace tools included, uses plain types.
func TestSchemasHaveNoNullableUnions(t *testing.T) {
	p := startServer(t, startOpts{env: workspaceEnv(t)})
	result(t, p.call("initialize", map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{"experimental": map[string]any{"buzz/hooks": map[string]any{}}},
		"clientInfo":   map[string]any{"name": "schema-walk", "version": "0"}}))
	tools := result(t, p.call("tools/list", nil))["tools"].([]any)
	if len(tools) < len(wantTools)+2 {
		t.Fatalf("tools/list has %d tools; want the hooks and workspace tools too", len(tools))
	}
	for _, x := range tools {
		m := x.(map[string]any)
		for _, key := range []string{"inputSchema", "outputSchema"} {
			for _, at := range typeArrays(m[key], "") {
				b, _ := json.Marshal(m[key])
				t.Errorf("%s %s has a type union at %s: %s", m["name"], key, at, b)
			}
		}
	}
}

// TestServerQuietByDefault: buzz-dev-mcp wrote INFO lines (started,
// initialize, cancelled calls) to stderr, which MCP hosts file as errors.
// The default level is warn; BUZZ_DEV_MCP_LOG=info brings them back.
func TestServerQuietByDefault(t *testing.T) {
	run := func(level string) string {
		p := startServer(t, startOpts{env: []string{"BUZZ_DEV_MCP_LOG=" + level}})
		p.initialize("2025-11-25")
		p.tool("shell", map[string]any{"command": "echo hi"})
		p.tool("read_file", map[string]any{"path": "missing.txt"})
		p.stdin.Close()
		<-p.done
		p.cmd.Wait()
		return p.stderrText()
	}
	if got := run(""); got != "" {
		t.Errorf("default stderr = %q; want nothing at the default level", got)
	}
	if got := run("info"); !strings.Contains(got, "level=INFO") || !strings.Contains(got, "msg=started") {
		t.Errorf("BUZZ_DEV_MCP_LOG=info stderr = %q; want the INFO lines", got)
	}
}
