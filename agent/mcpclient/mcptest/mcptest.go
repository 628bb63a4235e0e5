// Package mcptest is a fake MCP stdio server for tests, steered by
// FAKE_MCP_* environment variables so one test binary can play a well
// behaved server, one that hangs on initialize, a slow or dying tool, a
// server whose grandchild holds the pipe, oversize metadata and lifecycle
// hooks. Test binaries run it from TestMain when BUZZ_FAKE_MCP=1. It is
// test support only.
package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"buzzbox/internal/jsonrpc"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvSwitch marks a test-binary child that must act as the fake server.
const EnvSwitch = "BUZZ_FAKE_MCP"

type fake struct {
	env       map[string]string
	conn      *jsonrpc.Conn
	mu        sync.Mutex
	stopCount int
	shrunk    bool // after the "shrink" tool: echo is no longer listed
	gate      *gatedReader
}

// gatedReader stops reading for good once stop is closed (FAKE_MCP_STOP_READING:
// after tools/list the server never reads stdin again, so the client's
// writes fill the pipe and block).
type gatedReader struct {
	r    io.Reader
	stop chan struct{}
	once sync.Once
}

func (g *gatedReader) Read(p []byte) (int, error) {
	select {
	case <-g.stop:
		// A sleeping goroutine, not select{}: with every goroutine blocked
		// on channels the runtime would end the process as deadlocked.
		// The client kills the process.
		time.Sleep(24 * time.Hour)
		return 0, io.EOF
	default:
	}
	return g.r.Read(p)
}

func (f *fake) get(k string) string { return f.env["FAKE_MCP_"+k] }
func (f *fake) on(k string) bool    { v := f.get(k); return v != "" && v != "0" }
func (f *fake) num(k string) int    { n, _ := strconv.Atoi(f.get(k)); return n }

func (f *fake) appendFile(k, line string) {
	if p := f.get(k); p != "" {
		fh, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(fh, line)
			fh.Close()
		}
	}
}

// Main serves MCP on stdin/stdout until EOF and returns the exit code.
func Main(stdin io.Reader, stdout io.Writer, environ []string) int {
	f := &fake{env: map[string]string{}}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		f.env[k] = v
	}
	if p := f.get("PID_FILE"); p != "" {
		os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	if f.on("SPAWN_GRANDCHILD") {
		// The grandchild inherits our stdout and sleeps: it holds the pipe open.
		cmd := exec.Command("sleep", "1000")
		cmd.Stdout = stdout
		if err := cmd.Start(); err == nil {
			os.WriteFile(f.get("GRANDCHILD_PID_FILE"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		}
	}
	if f.on("GOSDK") {
		return goSDKServer()
	}
	if f.on("STOP_READING") {
		f.gate = &gatedReader{r: stdin, stop: make(chan struct{})}
		stdin = f.gate
	}
	f.conn = jsonrpc.NewConn(stdin, stdout, jsonrpc.Options{})
	if err := f.conn.Serve(context.Background(), f.handle); err != nil {
		return 1
	}
	return 0
}

// goSDKServer serves one tool with the official Go SDK, a dual-era server
// (legacy initialize and 2026-07-28 server/discover).
func goSDKServer() int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "gosdk", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "shout", Description: "appends !"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text + "!"}}}, nil, nil
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

func (f *fake) tools() []map[string]any {
	schema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	if f.on("HUGE_SCHEMA") {
		schema["description"] = strings.Repeat("s", 5000)
	}
	desc := "a test tool"
	if n := f.num("DESC_SIZE"); n > 0 {
		desc = strings.Repeat("d", n)
	}
	if f.on("HUGE_DESC") {
		desc = strings.Repeat("d", 100_000)
	}
	var out []map[string]any
	add := func(name string) {
		out = append(out, map[string]any{"name": name, "description": desc, "inputSchema": schema})
	}
	if n := f.num("TOOL_COUNT"); n > 0 {
		for i := 0; i < n; i++ {
			add(fmt.Sprintf("tool_%d", i))
		}
		return out
	}
	f.mu.Lock()
	shrunk := f.shrunk
	f.mu.Unlock()
	for _, n := range []string{"echo", "slow", "die", "getenv", "fail", "reject", "image", "shrink"} {
		if n == "echo" && shrunk {
			continue
		}
		add(n)
	}
	if f.on("SHELL_TOOL") {
		add("shell")
	}
	if f.on("STOP_HOOK") {
		add("_Stop")
	}
	if f.on("POSTCOMPACT_HOOK") {
		add("_PostCompact")
	}
	if extra := f.get("EXTRA_TOOL"); extra != "" {
		add(extra)
	}
	return out
}

func text(s string) map[string]any {
	return map[string]any{"content": []map[string]any{{"type": "text", "text": s}}}
}

func (f *fake) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	switch req.Method {
	case "initialize":
		if f.on("HANG_INIT") {
			<-ctx.Done()
			return nil, jsonrpc.ErrNoReply
		}
		return map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "fake", "version": "0"}}, nil
	case "notifications/initialized":
		return nil, nil
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		json.Unmarshal(req.Params, &p)
		f.appendFile("CANCEL_LOG", string(p.RequestID))
		f.conn.CancelRequest(p.RequestID)
		return nil, nil
	case "tools/list":
		if f.on("HANG_TOOLS") {
			<-ctx.Done()
			return nil, jsonrpc.ErrNoReply
		}
		tools := f.tools()
		if f.gate != nil {
			f.gate.once.Do(func() { close(f.gate.stop) })
		}
		if f.on("PAGED") {
			var p struct {
				Cursor string `json:"cursor"`
			}
			json.Unmarshal(req.Params, &p)
			start, _ := strconv.Atoi(p.Cursor)
			end := min(start+2, len(tools))
			res := map[string]any{"tools": tools[start:end]}
			if end < len(tools) {
				res["nextCursor"] = strconv.Itoa(end)
			}
			return res, nil
		}
		return map[string]any{"tools": tools}, nil
	case "tools/call":
		return f.call(ctx, req)
	}
	if req.IsNotification() {
		return nil, nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.MethodNotFound, "method not found: %s", req.Method)
}

func (f *fake) call(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	json.Unmarshal(req.Params, &p)
	f.appendFile("CALL_RECEIVED", p.Name+" "+string(req.ID))
	if d := f.num("TOOL_DELAY_MS"); d > 0 && !strings.HasPrefix(p.Name, "_") {
		select {
		case <-time.After(time.Duration(d) * time.Millisecond):
		case <-ctx.Done():
			return nil, jsonrpc.ErrNoReply
		}
	}
	arg, _ := p.Arguments["text"].(string)
	switch p.Name {
	case "echo", "shell":
		if n := f.num("RESULT_SIZE"); n > 0 {
			return text(strings.Repeat("r", n)), nil
		}
		if p.Name == "shell" {
			cmd, _ := p.Arguments["command"].(string)
			return text("ran: " + cmd), nil
		}
		return text(arg), nil
	case "slow":
		<-ctx.Done()
		return nil, jsonrpc.ErrNoReply
	case "die":
		os.Exit(3)
	case "shrink":
		f.mu.Lock()
		f.shrunk = true
		f.mu.Unlock()
		f.conn.Notify("notifications/tools/list_changed", nil)
		return text("shrunk"), nil
	case "getenv":
		return text(os.Getenv(arg)), nil
	case "fail":
		r := text("it failed")
		r["isError"] = true
		return r, nil
	case "reject":
		return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "bad arguments for reject")
	case "image":
		return map[string]any{"content": []map[string]any{{"type": "text", "text": "pic:"}, {"type": "image", "data": strings.Repeat("QUJD", 10), "mimeType": "image/png"}}}, nil
	case "_Stop":
		if d := f.num("STOP_DELAY_MS"); d > 0 {
			select {
			case <-time.After(time.Duration(d) * time.Millisecond):
			case <-ctx.Done():
				return nil, jsonrpc.ErrNoReply
			}
		}
		f.mu.Lock()
		f.stopCount++
		n := f.stopCount
		f.mu.Unlock()
		if limit := f.num("STOP_COUNT"); limit > 0 && n > limit {
			return text(""), nil
		}
		t := f.get("STOP_TEXT")
		if t == "" {
			t = "not done yet"
		}
		return text(t), nil
	case "ask":
		// Asks the client what buzz-agent does not offer, in the middle of
		// the call, and reports the error code each request got.
		var got []string
		for _, m := range []string{"elicitation/create", "sampling/createMessage", "roots/list"} {
			err := f.conn.Call(ctx, m, map[string]any{}, nil)
			code := 0
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) {
				code = rpcErr.Code
			}
			got = append(got, fmt.Sprintf("%s:%d", m, code))
		}
		return text(strings.Join(got, " ")), nil
	case "_PostCompact":
		t := f.get("POSTCOMPACT_TEXT")
		if t == "" {
			t = "state to keep"
		}
		return text(t), nil
	}
	if strings.HasPrefix(p.Name, "tool_") || p.Name == f.get("EXTRA_TOOL") {
		return text("ok " + p.Name), nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.InvalidParams, "unknown tool: %s", p.Name)
}
