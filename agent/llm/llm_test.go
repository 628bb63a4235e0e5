package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"buzzbox/agent/llm"
	"buzzbox/agent/llm/llmtest"
)

func client(t *testing.T, p llm.Provider, base string, mod func(*llm.Config)) *llm.Client {
	cfg := llm.Config{Provider: p, BaseURL: base, APIKey: "k", MaxOutputTokens: 1000,
		IdleTimeout: 5 * time.Second, RetryBase: time.Millisecond, RetryAfterCap: 50 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	return llm.New(cfg)
}

type dialectCase struct {
	name string
	p    llm.Provider
	mod  func(*llm.Config)
	path string
}

var dialects = []dialectCase{
	{"anthropic", llm.Anthropic, nil, "/v1/messages"},
	{"chat", llm.OpenAI, func(c *llm.Config) { c.API = llm.APIChat }, "/chat/completions"},
	{"responses", llm.OpenAI, func(c *llm.Config) { c.API = llm.APIResponses }, "/responses"},
	{"openrouter", llm.OpenRouter, nil, "/chat/completions"},
}

// TestDialectsStreamedEqualsWhole checks that every dialect yields the same
// reply streamed and not, and that deltas were forwarded while streaming.
func TestDialectsStreamedEqualsWhole(t *testing.T) {
	rep := llmtest.Reply{Text: "hello there world", Reasoning: "thinking hard",
		Calls:       []llmtest.Call{{ID: "c1", Name: "srv__echo", Args: `{"x":1}`}, {ID: "c2", Name: "srv__other"}},
		InputTokens: 10, OutputTokens: 5}
	for _, dc := range dialects {
		for _, stream := range []bool{false, true} {
			t.Run(dc.name+map[bool]string{true: "/stream", false: "/whole"}[stream], func(t *testing.T) {
				srv := llmtest.New(t, rep)
				c := client(t, dc.p, srv.URL, func(cfg *llm.Config) {
					if dc.mod != nil {
						dc.mod(cfg)
					}
					cfg.NoStream = !stream
				})
				var text, thought strings.Builder
				resp, err := c.Complete(context.Background(), &llm.Request{Model: "m", System: "sys",
					Messages: []llm.Message{llm.User("hi")},
					OnText:   func(s string) { text.WriteString(s) }, OnThought: func(s string) { thought.WriteString(s) }})
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text != rep.Text || resp.Reasoning != rep.Reasoning {
					t.Errorf("text/reasoning = %q/%q; want %q/%q", resp.Text, resp.Reasoning, rep.Text, rep.Reasoning)
				}
				if len(resp.Calls) != 2 || resp.Calls[0].ID != "c1" || string(resp.Calls[0].Args) != `{"x":1}` || string(resp.Calls[1].Args) != "{}" {
					t.Errorf("calls = %+v", resp.Calls)
				}
				if resp.Stop != llm.StopToolUse {
					t.Errorf("stop = %v", resp.Stop)
				}
				if resp.Usage.Input == nil || *resp.Usage.Input != 10 || resp.Usage.Output == nil || *resp.Usage.Output != 5 {
					t.Errorf("usage = %+v", resp.Usage)
				}
				if stream && (text.String() != rep.Text || thought.String() != rep.Reasoning || !resp.Streamed) {
					t.Errorf("forwarded %q / %q", text.String(), thought.String())
				}
				if got := srv.Paths()[0]; got != dc.path {
					t.Errorf("path = %s; want %s", got, dc.path)
				}
			})
		}
	}
}

func TestChatBodyShape(t *testing.T) {
	srv := llmtest.New(t)
	c := client(t, llm.OpenAI, srv.URL, func(cfg *llm.Config) { cfg.NoStream = true })
	call := llm.ToolCall{ID: "a", Name: "s__t", Args: json.RawMessage(`{}`)}
	_, err := c.Complete(context.Background(), &llm.Request{Model: "m", System: "S", Messages: []llm.Message{
		llm.User("u"), {Role: llm.RoleAssistant, Calls: []llm.ToolCall{call}},
		call.Result([]llm.Part{{Text: "r"}, {Image: &llm.Image{Data: "AAAA", MIME: "image/png"}}}, false),
	}, Tools: []llm.Tool{{Name: "s__t", Schema: json.RawMessage(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	body := srv.Requests()[0]
	if body["stream"] != false {
		t.Errorf("stream = %v; want false", body["stream"])
	}
	msgs := body["messages"].([]any)
	asst := msgs[2].(map[string]any)
	if c, ok := asst["content"].(string); !ok || c != "" {
		t.Errorf("assistant content = %#v; want \"\"", asst["content"])
	}
	if len(msgs) != 5 || msgs[4].(map[string]any)["role"] != "user" {
		t.Errorf("messages = %v; want image user message after the tool run", msgs)
	}
}

func TestAnthropicCacheAndBatching(t *testing.T) {
	srv := llmtest.New(t)
	c := client(t, llm.Anthropic, srv.URL, func(cfg *llm.Config) { cfg.NoStream = true; cfg.PromptCaching = true })
	a, b := llm.ToolCall{ID: "a", Name: "x"}, llm.ToolCall{ID: "b", Name: "y"}
	_, err := c.Complete(context.Background(), &llm.Request{Model: "claude-x", System: "S", Messages: []llm.Message{
		llm.User("u"), {Role: llm.RoleAssistant}, {Role: llm.RoleAssistant, Calls: []llm.ToolCall{a, b}},
		a.Result([]llm.Part{{Text: "1"}}, false), b.Result([]llm.Part{{Text: "2"}}, true),
	}})
	if err != nil {
		t.Fatal(err)
	}
	body := srv.Requests()[0]
	sys := body["system"].([]any)
	if len(sys) != 1 || sys[0].(map[string]any)["cache_control"] == nil {
		t.Errorf("system = %v", sys)
	}
	msgs := body["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages = %d; want 3 (empty assistant omitted, results batched)", len(msgs))
	}
	for _, m := range msgs[1:] {
		content := m.(map[string]any)["content"].([]any)
		if content[len(content)-1].(map[string]any)["cache_control"] == nil {
			t.Errorf("last block of %v lacks cache_control", m)
		}
	}
}

func TestRetryOn5xxThenSuccess(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 503, Body: "busy"}, llmtest.Reply{Status: 502, Body: "bad"}, llmtest.Reply{Text: "ok"})
	c := client(t, llm.Anthropic, srv.URL, nil)
	resp, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}})
	if err != nil || resp.Text != "ok" {
		t.Fatalf("Complete = %v, %v", resp, err)
	}
}

func TestStatusErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      llm.Provider
		status int
		kind   llm.Kind
		reqs   int
		want   string
	}{
		{"anthropic401", llm.Anthropic, 401, llm.KindAuth, 1, "401"},
		{"openai401RetriedOnce", llm.OpenAI, 401, llm.KindAuth, 2, "401"},
		{"anthropic404", llm.Anthropic, 404, llm.KindNotFound, 1, "404"},
		{"openrouter402", llm.OpenRouter, 402, llm.KindOther, 1, "credits exhausted"},
		{"openrouter403", llm.OpenRouter, 403, llm.KindOther, 1, "403"},
		{"openrouter401", llm.OpenRouter, 401, llm.KindAuth, 1, "static key rejected"},
		{"anthropic429Exhausted", llm.Anthropic, 429, llm.KindOther, 3, "exhausted retries"},
		{"anthropic400", llm.Anthropic, 400, llm.KindOther, 1, "400: nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.SetFallback(llmtest.Reply{Status: tc.status, Body: "nope"})
			c := client(t, tc.p, srv.URL, func(cfg *llm.Config) { cfg.API = llm.APIChat })
			_, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}})
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != tc.kind || !strings.Contains(e.Msg, tc.want) {
				t.Fatalf("err = %v; want kind %v containing %q", err, tc.kind, tc.want)
			}
			if srv.Count() != tc.reqs {
				t.Errorf("requests = %d; want %d", srv.Count(), tc.reqs)
			}
		})
	}
}

func TestOpenRouterRetryAfterCapped(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 429, Body: "slow", Header: map[string]string{"Retry-After": "3600"}}, llmtest.Reply{Text: "ok"})
	c := client(t, llm.OpenRouter, srv.URL, nil)
	start := time.Now()
	resp, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}})
	if err != nil || resp.Text != "ok" {
		t.Fatalf("Complete = %v, %v", resp, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("slept %v; the cap should bound Retry-After", d)
	}
	h := srv.Headers()[0]
	if h.Get("HTTP-Referer") == "" || h.Get("X-OpenRouter-Title") != "Buzz" {
		t.Errorf("headers = %v", h)
	}
}

func TestOpenRouterBody(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Text: "r", ReasoningDetails: `[{"type":"reasoning.text","text":"x","index":0}]`})
	c := client(t, llm.OpenRouter, srv.URL, func(cfg *llm.Config) { cfg.NoStream = true; cfg.PromptCaching = true; cfg.Effort = "high" })
	resp, err := c.Complete(context.Background(), &llm.Request{Model: "anthropic/claude", System: "S", Messages: []llm.Message{llm.User("a"), llm.User("b"), llm.User("c")},
		Tools: []llm.Tool{{Name: "t", Schema: json.RawMessage(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.ReasoningDetails) != `[{"type":"reasoning.text","text":"x","index":0}]` {
		t.Errorf("reasoning details = %s", resp.ReasoningDetails)
	}
	body := srv.Requests()[0]
	if _, ok := body["max_tokens"]; !ok || body["max_completion_tokens"] != nil || body["provider"] != nil {
		t.Errorf("body = %v", body)
	}
	if body["reasoning"].(map[string]any)["effort"] != "high" {
		t.Errorf("reasoning = %v", body["reasoning"])
	}
	msgs := body["messages"].([]any)
	if _, ok := msgs[1].(map[string]any)["content"].(string); !ok {
		t.Errorf("first user message should stay a string: %v", msgs[1])
	}
	for _, i := range []int{0, 2, 3} {
		if _, ok := msgs[i].(map[string]any)["content"].([]any); !ok {
			t.Errorf("message %d should carry cache_control: %v", i, msgs[i])
		}
	}
	// Replay on the next request.
	_, err = c.Complete(context.Background(), &llm.Request{Model: "anthropic/claude", Messages: []llm.Message{llm.User("a"), resp.Assistant(nil), llm.User("b")}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(srv.Bodies()[1]), `"reasoning_details":[{"type":"reasoning.text","text":"x","index":0}]`) {
		t.Errorf("reasoning_details not replayed: %s", srv.Bodies()[1])
	}
}

func TestOpenAIAutoUpgradesToResponses(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 400, Body: `{"error":"this model requires /v1/responses"}`}, llmtest.Reply{Text: "ok"}, llmtest.Reply{Text: "again"})
	c := client(t, llm.OpenAI, srv.URL, nil)
	resp, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}})
	if err != nil || resp.Text != "ok" {
		t.Fatalf("Complete = %v, %v", resp, err)
	}
	if _, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"/chat/completions", "/responses", "/responses"}
	if got := srv.Paths(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("paths = %v; want %v", got, want)
	}
}

func TestIdleTimeout(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetFallback(llmtest.Reply{Hang: true})
	c := client(t, llm.Anthropic, srv.URL, func(cfg *llm.Config) { cfg.IdleTimeout = 100 * time.Millisecond })
	_, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}})
	if err == nil || !strings.Contains(err.Error(), "inactivity") {
		t.Fatalf("err = %v; want inactivity timeout", err)
	}
}

func TestMalformedBodies(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"notJSON", "{oops", "json:"},
		{"noChoices", `{"choices":[]}`, "no choices"},
		{"errorInside200", `{"error":{"code":500,"message":"boom"}}`, "provider error (500): boom"},
		{"finishError", `{"choices":[{"finish_reason":"error","error":{"code":"x","message":"m","metadata":{"error_type":"t"}}}]}`, "provider error (x, t): m"},
		{"badArgs", `{"choices":[{"finish_reason":"tool_calls","message":{"content":"","tool_calls":[{"id":"a","function":{"name":"n","arguments":"[1]"}}]}}]}`, "must be a JSON object"},
		{"missingID", `{"choices":[{"finish_reason":"tool_calls","message":{"content":"","tool_calls":[{"function":{"name":"n","arguments":"{}"}}]}}]}`, "missing id or name"},
		{"streamCutShort", "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", "transport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Reply{Body: tc.body})
			c := client(t, llm.OpenAI, srv.URL, func(cfg *llm.Config) { cfg.API = llm.APIChat })
			_, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
}

func TestDuplicateIDsRewritten(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Calls: []llmtest.Call{{ID: "f", Name: "a"}, {ID: "f", Name: "b"}, {ID: "f", Name: "c"}}})
	c := client(t, llm.OpenAI, srv.URL, func(cfg *llm.Config) { cfg.API = llm.APIChat })
	resp, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range resp.Calls {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, ",") != "f,f-2,f-3" {
		t.Errorf("ids = %v", ids)
	}
}

func TestDatabricksServingEndpoint(t *testing.T) {
	srv := llmtest.New(t)
	c := client(t, llm.Databricks, srv.URL, func(cfg *llm.Config) { cfg.NoStream = true })
	if _, err := c.Complete(context.Background(), &llm.Request{Model: "my-endpoint", Messages: []llm.Message{llm.User("x")}}); err != nil {
		t.Fatal(err)
	}
	if p := srv.Paths()[0]; p != "/serving-endpoints/my-endpoint/invocations" {
		t.Errorf("path = %s", p)
	}
	if _, ok := srv.Requests()[0]["model"]; ok {
		t.Error("databricks body carries model")
	}
	if h := srv.Headers()[0].Get("Authorization"); h != "Bearer k" {
		t.Errorf("auth = %q", h)
	}
}

func TestDatabricksV2Routes(t *testing.T) {
	for model, want := range map[string]string{
		"databricks-gpt-5":       "/ai-gateway/openai/v1/responses",
		"databricks-claude-opus": "/ai-gateway/anthropic/v1/messages",
		"llama-3-70b":            "/ai-gateway/mlflow/v1/chat/completions",
	} {
		srv := llmtest.New(t)
		c := client(t, llm.DatabricksV2, srv.URL, func(cfg *llm.Config) { cfg.NoStream = true })
		if _, err := c.Complete(context.Background(), &llm.Request{Model: model, Messages: []llm.Message{llm.User("x")}}); err != nil {
			t.Fatal(err)
		}
		if p := srv.Paths()[0]; p != want {
			t.Errorf("%s -> %s; want %s", model, p, want)
		}
	}
}

func TestChatReplaysProviderExtraAndReasoningContent(t *testing.T) {
	body := `{"choices":[{"finish_reason":"tool_calls","message":{"content":"","reasoning_content":"deep","tool_calls":[{"id":"a","type":"function","thoughtSignature":"sig==","function":{"name":"n","arguments":"{}"}}]}}]}`
	srv := llmtest.New(t, llmtest.Reply{Body: body})
	c := client(t, llm.OpenAI, srv.URL, func(cfg *llm.Config) { cfg.API = llm.APIChat; cfg.NoStream = true })
	resp, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}})
	if err != nil {
		t.Fatal(err)
	}
	hist := []llm.Message{llm.User("x"), resp.Assistant(resp.Calls), resp.Calls[0].Result([]llm.Part{{Text: "r"}}, false)}
	if _, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: hist}); err != nil {
		t.Fatal(err)
	}
	b := string(srv.Bodies()[1])
	if !strings.Contains(b, `"thoughtSignature":"sig=="`) || !strings.Contains(b, `"reasoning_content":"deep"`) {
		t.Errorf("second body lost provider fields: %s", b)
	}
}

func TestAnthropicThinkingReplayAndEffort(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Reasoning: "hmm", Calls: []llmtest.Call{{ID: "t", Name: "x"}}})
	c := client(t, llm.Anthropic, srv.URL, func(cfg *llm.Config) { cfg.Effort = "high"; cfg.MaxOutputTokens = 64000 })
	resp, err := c.Complete(context.Background(), &llm.Request{Model: "claude-opus-4-7", Messages: []llm.Message{llm.User("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Thinking) != 1 {
		t.Fatalf("thinking blocks = %d", len(resp.Thinking))
	}
	hist := []llm.Message{llm.User("x"), resp.Assistant(resp.Calls), resp.Calls[0].Result([]llm.Part{{Text: "r"}}, false)}
	if _, err := c.Complete(context.Background(), &llm.Request{Model: "claude-opus-4-7", Messages: hist}); err != nil {
		t.Fatal(err)
	}
	body := srv.Requests()[1]
	if body["thinking"].(map[string]any)["type"] != "adaptive" || body["output_config"].(map[string]any)["effort"] != "high" {
		t.Errorf("thinking fields = %v %v", body["thinking"], body["output_config"])
	}
	asst := body["messages"].([]any)[1].(map[string]any)["content"].([]any)
	if first := asst[0].(map[string]any); first["type"] != "thinking" || first["signature"] != "sig" {
		t.Errorf("assistant does not start with the thinking block: %v", asst)
	}
}

func TestAnthropicOverloadedInStreamRetried(t *testing.T) {
	overloaded := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	srv := llmtest.New(t, llmtest.Reply{Body: overloaded}, llmtest.Reply{Text: "ok"})
	c := client(t, llm.Anthropic, srv.URL, nil)
	resp, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}})
	if err != nil || resp.Text != "ok" || srv.Count() != 2 {
		t.Fatalf("Complete = %v, %v after %d requests", resp, err, srv.Count())
	}
}

func TestOpenRouterRetryAfterHonoured(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 429, Body: "slow", Header: map[string]string{"Retry-After": "1"}}, llmtest.Reply{Text: "ok"})
	c := client(t, llm.OpenRouter, srv.URL, func(cfg *llm.Config) { cfg.RetryAfterCap = 0 }) // default 60 s cap
	start := time.Now()
	if _, err := c.Complete(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.User("x")}}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("retried after %v; Retry-After asked for 1s", d)
	}
}

// TestKeepalivesAreNoProgress: per dialect, a stream of nothing but its
// keep-alives (comments, Anthropic ping, empty chunks, Responses
// in_progress) ends at the idle timeout; the same stream with a text delta
// every tick would not.
func TestKeepalivesAreNoProgress(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    llm.Provider
		api  string
		tick string
	}{
		{"anthropic", llm.Anthropic, "", "event: ping\ndata: {\"type\":\"ping\"}\n\n"},
		{"chat", llm.OpenAI, llm.APIChat, ": keepalive\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{}}]}\n\n"},
		{"responses", llm.OpenAI, llm.APIResponses, "data: {\"type\":\"response.in_progress\"}\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				tk := time.NewTicker(20 * time.Millisecond)
				defer tk.Stop()
				for {
					io.WriteString(w, tc.tick)
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-tk.C:
					}
				}
			}))
			defer srv.Close()
			c := client(t, tc.p, srv.URL, func(cfg *llm.Config) {
				cfg.API = tc.api
				cfg.IdleTimeout = 200 * time.Millisecond
				cfg.IdleSetting = "IDLE_KNOB"
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := c.Complete(ctx, &llm.Request{Model: "m", Messages: []llm.Message{llm.User("hi")}})
			var le *llm.Error
			if !errors.As(err, &le) || !strings.Contains(le.Msg, "no progress") || !strings.Contains(le.Msg, "IDLE_KNOB") {
				t.Fatalf("Complete = %v; want the inactivity timeout naming its setting", err)
			}
		})
	}
}

// TestMaxCallTimeEndsDrip: a stream that keeps making progress and never
// finishes ends at MaxCallTime with an error naming the setting.
func TestMaxCallTimeEndsDrip(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tk.C:
			}
		}
	}))
	defer srv.Close()
	c := client(t, llm.OpenAI, srv.URL, func(cfg *llm.Config) {
		cfg.API = llm.APIChat
		cfg.IdleTimeout = 200 * time.Millisecond
		cfg.MaxCallTime = 500 * time.Millisecond
		cfg.MaxCallSetting = "CALL_KNOB"
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Complete(ctx, &llm.Request{Model: "m", Messages: []llm.Message{llm.User("hi")}, OnText: func(string) {}})
	var le *llm.Error
	if !errors.As(err, &le) || !strings.Contains(le.Msg, "wall-clock cap of 500ms") || !strings.Contains(le.Msg, "CALL_KNOB") {
		t.Fatalf("Complete = %v; want the wall-clock cap naming its setting", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the test's own minute ran out: the cap did not end the call")
	}
}
