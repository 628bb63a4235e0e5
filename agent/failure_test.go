package agent

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/acp"
)

// promptFailure sends one prompt that must fail and returns the error's
// code, message and data as acp.Failure.
func promptFailure(t *testing.T, c *client) (int, string, acp.Failure) {
	t.Helper()
	f := c.reply(c.request("session/prompt", map[string]any{"sessionId": c.newSession(), "prompt": []map[string]any{{"type": "text", "text": "x"}}}))
	var e struct {
		Error *struct {
			Code    int         `json:"code"`
			Message string      `json:"message"`
			Data    acp.Failure `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(f.raw), &e); err != nil || e.Error == nil {
		t.Fatalf("prompt reply %s; want an error", f.raw)
	}
	return e.Error.Code, e.Error.Message, e.Error.Data
}

// TestFailureDataNamesTheCause: the ACP error of a failed prompt carries
// the cause as facts (kind, status, retryable, the variables to change),
// so the harness can tell the person; the key a 401 body echoes is in
// neither the data nor the message.
func TestFailureDataNamesTheCause(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	for _, tc := range []struct {
		status    int
		body      string
		kind      string
		retryable bool
	}{
		{401, `{"error":{"message":"Incorrect API key provided: ` + key + `"}}`, acp.FailureAuth, false},
		{404, `{"error":{"code":"model_not_found"}}`, acp.FailureModelNotFound, false},
		{400, `{"error":{"message":"The model does not exist","code":"model_not_found"}}`, acp.FailureModelNotFound, false},
		{429, `slow down`, acp.FailureRateLimited, true},
		{503, `overloaded`, acp.FailureProvider, true},
		{422, `bad field`, acp.FailureOther, false},
	} {
		srv := llmtest.New(t)
		srv.SetFallback(llmtest.Reply{Status: tc.status, Body: tc.body})
		c := startAgent(t, srv, "OPENAI_COMPAT_API_KEY="+key)
		_, msg, d := promptFailure(t, c)
		if d.Kind != tc.kind || d.Status != tc.status || d.Retryable != tc.retryable {
			t.Errorf("status %d: data %+v; want kind %s retryable %v", tc.status, d, tc.kind, tc.retryable)
		}
		if d.KeyEnv != "OPENAI_COMPAT_API_KEY" || d.ModelEnv != "OPENAI_COMPAT_MODEL" || d.BaseURLEnv != "OPENAI_COMPAT_BASE_URL" ||
			d.Model != "test-model" || d.Provider != "openai" || d.BaseURL != srv.URL {
			t.Errorf("status %d: data %+v; want the openai variables, model and endpoint", tc.status, d)
		}
		if strings.Contains(msg, key) {
			t.Errorf("status %d: message %q carries the key", tc.status, msg)
		}
	}
}

// TestFailureDataUnreachable: a refused connection is told apart from a
// provider's own failure, and may be retried.
func TestFailureDataUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	srv := llmtest.New(t)
	c := startAgent(t, srv, "OPENAI_COMPAT_BASE_URL="+dead)
	_, _, d := promptFailure(t, c)
	if d.Kind != acp.FailureUnreachable || !d.Retryable || d.Status != 0 || d.BaseURL != dead {
		t.Errorf("data %+v; want unreachable, retryable, no status, endpoint %s", d, dead)
	}
}

// TestFailureDataDropsURLCredentials: an endpoint with user info or a
// query keeps them out of the data.
func TestFailureDataDropsURLCredentials(t *testing.T) {
	if got := publicURL("https://user:hunter22@llm.example/v1?key=abc#x"); got != "https://llm.example/v1" {
		t.Errorf("publicURL = %q; want https://llm.example/v1", got)
	}
}
