package mcpclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStreamableHTTPAgainstGoSDK attaches Streamable HTTP servers built with
// the official Go SDK (a peer this package did not write), answering both
// as SSE and as plain JSON.
func TestStreamableHTTPAgainstGoSDK(t *testing.T) {
	for _, jsonResp := range []bool{false, true} {
		srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
		type in struct {
			Text string `json:"text"`
		}
		mcp.AddTool(srv, &mcp.Tool{Name: "shout", Description: "appends !"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text + "!"}}}, nil, nil
		})
		mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "waits for cancel"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResp})
		hs := httptest.NewServer(h)
		r := newRegistry(t, testOpts(t), Spec{Name: "remote", Type: "http", URL: hs.URL, Headers: [][2]string{{"X-Test", "1"}}})
		if n := len(r.Tools()); n != 2 {
			t.Fatalf("tools = %d; want 2", n)
		}
		res, err := r.Call(context.Background(), "remote__shout", json.RawMessage(`{"text":"hey"}`), 5*time.Second)
		if err != nil || resultText(res) != "hey!" {
			t.Fatalf("shout = %+v, %v", res, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err = r.Call(ctx, "remote__wait", json.RawMessage(`{"text":""}`), 5*time.Second)
		cancel()
		var ce *CallError
		if !asCallError(err, &ce) || ce.Kind != CallCancelled {
			t.Errorf("wait = %v; want cancelled", err)
		}
		r.Close()
		hs.CloseClientConnections()
		hs.Close()
	}
}

func asCallError(err error, ce **CallError) bool {
	e, ok := err.(*CallError)
	*ce = e
	return ok
}
