package devmcp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestInitialize(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, startOpts{dir: dir})
	r := p.initialize("2025-06-18")
	if got := r["protocolVersion"]; got != "2025-06-18" {
		t.Errorf("protocolVersion = %v; want the requested 2025-06-18", got)
	}
	info := r["serverInfo"].(map[string]any)
	if info["name"] != "buzz-dev-mcp" {
		t.Errorf("serverInfo.name = %v; want buzz-dev-mcp", info["name"])
	}
	caps := r["capabilities"].(map[string]any)
	if _, ok := caps["tools"]; !ok || len(caps) != 1 {
		t.Errorf("capabilities = %v; want tools only", caps)
	}
	instr, _ := r["instructions"].(string)
	for _, want := range []string{"Working directory: " + dir + "\n", "Detected stack: unknown\n", "set BUZZ_SHELL to override", "workdir"} {
		if !strings.Contains(instr, want) {
			t.Errorf("instructions %q lack %q", instr, want)
		}
	}
	if !strings.HasPrefix(instr, "Working directory: ") {
		t.Errorf("instructions %q do not start with the working directory", instr)
	}
	if strings.Contains(instr, "Buzz relay") {
		t.Errorf("instructions mention the relay without BUZZ_RELAY_URL and BUZZ_PRIVATE_KEY: %q", instr)
	}
}

func TestInitializeCounterOffers(t *testing.T) {
	p := startServer(t, startOpts{})
	for _, tc := range []struct{ ask, want string }{
		{"2024-11-05", "2024-11-05"},
		{"2025-03-26", "2025-03-26"},
		{"2025-11-25", "2025-11-25"},
		{"1999-01-01", "2025-11-25"},
		{"2026-07-28", "2025-11-25"}, // the initialize handshake is legacy by definition
	} {
		r := result(t, p.call("initialize", map[string]any{"protocolVersion": tc.ask, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}}))
		if got := r["protocolVersion"]; got != tc.want {
			t.Errorf("initialize(%s) = %v; want %s", tc.ask, got, tc.want)
		}
	}
}

func TestDetectedStack(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"Cargo.toml", "package.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := startServer(t, startOpts{dir: dir})
	instr := p.initialize("2025-11-25")["instructions"].(string)
	if !strings.Contains(instr, "Detected stack: node, rust (cargo)\n") {
		t.Errorf("instructions = %q; want Detected stack: node, rust (cargo)", instr)
	}
}

func TestRelayHint(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want bool
	}{
		{[]string{"BUZZ_RELAY_URL=wss://relay.example.com", "BUZZ_PRIVATE_KEY=x"}, true},
		{[]string{"BUZZ_RELAY_URL=wss://relay.example.com"}, false},
		{[]string{"BUZZ_PRIVATE_KEY=x"}, false},
	} {
		p := startServer(t, startOpts{env: tc.env})
		instr := p.initialize("2025-11-25")["instructions"].(string)
		if got := strings.Contains(instr, "buzz --help"); got != tc.want {
			t.Errorf("env %v: relay hint present = %v; want %v (instructions %q)", tc.env, got, tc.want, instr)
		}
	}
}

// wantTools is what tools/list shows a client that runs no host hooks.
var wantTools = []string{"read_file", "shell", "str_replace", "todo", "view_image"}

func TestToolsList(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	tools := result(t, p.call("tools/list", nil))["tools"].([]any)
	var names []string
	byName := map[string]map[string]any{}
	for _, x := range tools {
		m := x.(map[string]any)
		names = append(names, m["name"].(string))
		byName[m["name"].(string)] = m
		if s, ok := m["inputSchema"].(map[string]any); !ok || s["type"] != "object" {
			t.Errorf("tool %v inputSchema = %v; want an object schema", m["name"], m["inputSchema"])
		}
	}
	if !reflect.DeepEqual(names, wantTools) {
		t.Fatalf("tools/list names = %v; want %v", names, wantTools)
	}
	hint := func(tool, key string) any {
		a, _ := byName[tool]["annotations"].(map[string]any)
		return a[key]
	}
	for _, tc := range []struct {
		tool, key string
		want      any
	}{
		{"read_file", "readOnlyHint", true},
		{"view_image", "readOnlyHint", true},
		{"shell", "destructiveHint", true},
		{"str_replace", "destructiveHint", true},
		{"shell", "readOnlyHint", false},
		{"str_replace", "openWorldHint", false},
	} {
		if got := hint(tc.tool, tc.key); got != tc.want {
			t.Errorf("%s annotations.%s = %v; want %v", tc.tool, tc.key, got, tc.want)
		}
	}
	if _, ok := byName["shell"]["outputSchema"].(map[string]any); !ok {
		t.Errorf("shell has no outputSchema")
	}
	desc := func(n string) string { return byName[n]["description"].(string) }
	for _, tc := range []struct{ tool, want string }{
		{"read_file", "cat"}, {"str_replace", "sed"}, {"shell", "rg"}, {"shell", "300000"},
	} {
		if !strings.Contains(desc(tc.tool), tc.want) {
			t.Errorf("%s description lacks %q", tc.tool, tc.want)
		}
	}
}

func TestToolsListOldClientGetsNoNewFields(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2024-11-05")
	for _, x := range result(t, p.call("tools/list", nil))["tools"].([]any) {
		m := x.(map[string]any)
		if _, ok := m["annotations"]; ok {
			t.Errorf("tool %v has annotations for a 2024-11-05 client", m["name"])
		}
		if _, ok := m["outputSchema"]; ok {
			t.Errorf("tool %v has outputSchema for a 2024-11-05 client", m["name"])
		}
	}
	res := p.tool("shell", map[string]any{"command": "echo hi"})
	if _, ok := res["structuredContent"]; ok {
		t.Errorf("shell result has structuredContent for a 2024-11-05 client")
	}
}

// TestAttackResponseShapedFrameUnanswered: a frame with an id and no method
// (buzz-dev-mcp sends no requests, so it answers none) used to get no reply
// at all, leaving a client that sent it waiting forever.
func TestAttackResponseShapedFrameUnanswered(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	for i, line := range []string{`{"jsonrpc":"2.0","id":%d}`, `{"jsonrpc":"2.0","id":%d,"result":{}}`, `{"jsonrpc":"2.0","id":%d,"params":{}}`} {
		id := 2000 + i
		ch := make(chan map[string]any, 1)
		p.mu.Lock()
		p.waiters[fmt.Sprint(id)] = ch
		p.mu.Unlock()
		p.sendLine(fmt.Sprintf(line, id))
		if code, _ := rpcError(t, p.await(ch, line)); code != -32600 {
			t.Errorf("%s: code %d; want -32600", line, code)
		}
	}
	if r := p.call("ping", nil); r["error"] != nil {
		t.Fatalf("ping after response-shaped frames = %v; want {}", r)
	}
}

// TestProtocolAbuse sends what a broken client might, and checks each gets
// the right answer while the server keeps serving.
func TestProtocolAbuse(t *testing.T) {
	p := startServer(t, startOpts{})
	p.initialize("2025-11-25")
	alive := func(after string) {
		t.Helper()
		if r := p.call("ping", nil); r["error"] != nil {
			t.Fatalf("after %s: ping = %v; want {}", after, r)
		}
	}
	nullErr := func(what string, code int) {
		t.Helper()
		m := p.waitNote(what, func(m map[string]any) bool {
			e, _ := m["error"].(map[string]any)
			return e != nil && int(e["code"].(float64)) == code
		})
		p.mu.Lock()
		for i, x := range p.nullIDs {
			if reflect.ValueOf(x).Pointer() == reflect.ValueOf(m).Pointer() {
				p.nullIDs = append(p.nullIDs[:i], p.nullIDs[i+1:]...)
				break
			}
		}
		p.mu.Unlock()
	}

	p.sendLine(`{"jsonrpc":"2.0","id":1000,"method":"tools/list"`) // truncated JSON
	nullErr("parse error for truncated JSON", -32700)
	alive("malformed JSON")

	p.sendLine(`"just a string"`)
	nullErr("invalid request for a non-object message", -32600)
	alive("a non-object message")

	p.sendLine("{\"jsonrpc\":\"2.0\",\"id\":1001,\"method\":\"ping\",\"x\":\"\xff\xfe\"}") // not UTF-8
	nullErr("parse error for a non-UTF-8 frame", -32700)
	alive("a non-UTF-8 frame")

	if code, _ := rpcError(t, p.await(func() <-chan map[string]any {
		ch := make(chan map[string]any, 1)
		p.mu.Lock()
		p.waiters["1002"] = ch
		p.mu.Unlock()
		p.sendLine(`{"jsonrpc":"1.0","id":1002,"method":"ping"}`)
		return ch
	}(), "wrong jsonrpc version")); code != -32600 {
		t.Errorf("wrong jsonrpc version: code %d; want -32600", code)
	}

	p.sendLine(strings.Repeat("x", 48<<20+10)) // over the 48 MiB frame cap
	nullErr("invalid request for an over-cap line", -32600)
	alive("an over-cap line")

	if code, _ := rpcError(t, p.call("tools/list", []any{1, 2})); code != -32602 {
		t.Errorf("array params: code %d; want -32602", code)
	}
	if code, _ := rpcError(t, p.call("tools/call", "read_file")); code != -32602 {
		t.Errorf("string params: code %d; want -32602", code)
	}
	if code, _ := rpcError(t, p.call("no/such/method", map[string]any{})); code != -32601 {
		t.Errorf("unknown method: code %d; want -32601", code)
	}
	code, msg := rpcError(t, p.call("tools/call", map[string]any{"name": "rm_rf", "arguments": map[string]any{}}))
	if code != -32602 || !strings.Contains(msg, "rm_rf") {
		t.Errorf("unknown tool: %d %q; want -32602 naming the tool", code, msg)
	}
	if code, _ := rpcError(t, p.call("tools/call", map[string]any{"arguments": map[string]any{}})); code != -32602 {
		t.Errorf("tools/call without name: code %d; want -32602", code)
	}
	if code, _ := rpcError(t, p.call("tools/call", map[string]any{"name": 7})); code != -32602 {
		t.Errorf("tools/call with a numeric name: code %d; want -32602", code)
	}
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{"read_file", map[string]any{"path": 42}, `"path" must be a string`},
		{"read_file", map[string]any{"path": "x", "offset": "3"}, `"offset" must be an integer`},
		{"read_file", map[string]any{"path": "x", "offset": 1.5}, `"offset" must be an integer`},
		{"read_file", map[string]any{"path": "x", "limit": -1}, `"limit" must be >= 0`},
		{"read_file", map[string]any{}, `missing required field "path"`},
		{"read_file", []any{"x"}, "expected an object"},
		{"read_file", "x", "expected an object"},
		{"shell", map[string]any{"command": []any{"ls"}}, `"command" must be a string`},
		{"shell", map[string]any{"command": "true", "timeout_ms": "soon"}, `"timeout_ms" must be an integer`},
		{"str_replace", map[string]any{"path": "x", "old_str": "a"}, `missing required field "new_str"`},
		{"str_replace", map[string]any{"path": "x", "old_str": "a", "new_str": "b", "replace_all": "yes"}, `"replace_all" must be a boolean`},
		{"view_image", map[string]any{"source": false}, `"source" must be a string`},
		{"todo", map[string]any{"todos": "a"}, `"todos" must be an array`},
		{"todo", map[string]any{"todo": []any{}}, "unknown field"},
		{"_Stop", map[string]any{"x": 1}, "unknown field"},
		{"_PostCompact", map[string]any{"x": 1}, "unknown field"},
	} {
		got := errText(t, p.tool(tc.tool, tc.args))
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s(%v) error = %q; want it to contain %q", tc.tool, tc.args, got, tc.want)
		}
	}
	alive("argument errors")
	if p.stderrText() == "" {
		t.Errorf("server logged nothing on stderr")
	}
}

func TestModernEra(t *testing.T) {
	p := startServer(t, startOpts{})
	meta := func(v string) map[string]any {
		return map[string]any{
			"io.modelcontextprotocol/protocolVersion":    v,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "0"},
		}
	}
	checkModern := func(what string, r map[string]any) {
		t.Helper()
		if r["resultType"] != "complete" {
			t.Errorf("%s: resultType = %v; want complete", what, r["resultType"])
		}
		m, _ := r["_meta"].(map[string]any)
		si, _ := m["io.modelcontextprotocol/serverInfo"].(map[string]any)
		if si["name"] != "buzz-dev-mcp" {
			t.Errorf("%s: _meta serverInfo = %v; want buzz-dev-mcp", what, m)
		}
	}
	d := result(t, p.call("server/discover", map[string]any{"_meta": meta("2026-07-28")}))
	checkModern("server/discover", d)
	if vs := d["supportedVersions"].([]any); vs[0] != "2026-07-28" || len(vs) != 5 {
		t.Errorf("supportedVersions = %v; want 2026-07-28 and the four legacy versions", vs)
	}
	if _, ok := d["ttlMs"].(float64); !ok || d["cacheScope"] == nil {
		t.Errorf("discover lacks ttlMs/cacheScope: %v", d)
	}
	if !strings.HasPrefix(d["instructions"].(string), "Working directory: ") {
		t.Errorf("discover instructions = %q", d["instructions"])
	}
	l := result(t, p.call("tools/list", map[string]any{"_meta": meta("2026-07-28")}))
	checkModern("tools/list", l)
	if _, ok := l["ttlMs"].(float64); !ok || l["cacheScope"] == nil {
		t.Errorf("tools/list lacks ttlMs/cacheScope: %v", l)
	}
	c := result(t, p.call("tools/call", map[string]any{"_meta": meta("2026-07-28"), "name": "todo", "arguments": map[string]any{}}))
	checkModern("tools/call", c)
	if got := okText(t, c); got != "(todo list is empty)" {
		t.Errorf("todo read = %q", got)
	}

	r := p.call("tools/list", map[string]any{"_meta": meta("2099-01-01")})
	code, _ := rpcError(t, r)
	data, _ := r["error"].(map[string]any)["data"].(map[string]any)
	if code != -32022 || data["requested"] != "2099-01-01" || len(data["supported"].([]any)) == 0 {
		t.Errorf("unsupported version: %v; want -32022 with supported and requested", r)
	}
	noCaps := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
	if code, _ := rpcError(t, p.call("tools/list", map[string]any{"_meta": noCaps})); code != -32602 {
		t.Errorf("missing clientCapabilities: code %d; want -32602", code)
	}
	for _, m := range []string{"ping", "initialize"} {
		if code, _ := rpcError(t, p.call(m, map[string]any{"_meta": meta("2026-07-28")})); code != -32601 {
			t.Errorf("modern %s: code %d; want -32601", m, code)
		}
	}
	if code, _ := rpcError(t, p.call("server/discover", map[string]any{})); code != -32602 {
		t.Errorf("discover without _meta: code %d; want -32602", code)
	}
}
