package llm

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// chatDialect is OpenAI Chat Completions, also spoken by OpenRouter (with
// its extensions), Databricks serving endpoints and any OpenAI-compatible
// server (vLLM, llama.cpp, Ollama, gateways).
type chatDialect struct {
	openRouter bool
	databricks bool
	// path replaces /chat/completions (Databricks AI gateway).
	path string
}

func (d chatDialect) url(c *Client, model string) string {
	switch {
	case d.path != "":
		return c.cfg.BaseURL + d.path
	case d.databricks:
		return c.cfg.BaseURL + "/serving-endpoints/" + url.PathEscape(model) + "/invocations"
	}
	return c.cfg.BaseURL + "/chat/completions"
}

func (d chatDialect) headers(c *Client, h http.Header) {
	h.Set("Authorization", "Bearer "+c.cfg.APIKey)
	if d.openRouter {
		h.Set("HTTP-Referer", "https://github.com/block/buzz")
		h.Set("X-OpenRouter-Title", "Buzz")
	}
}

func (d chatDialect) body(c *Client, req *Request, stream bool) ([]byte, error) {
	msgs := chatMessages(req.System, req.Messages, d.openRouter)
	b := obj{"model": req.Model, "stream": stream, "messages": msgs}
	if stream {
		b["stream_options"] = obj{"include_usage": true}
	}
	if d.openRouter {
		b["max_tokens"] = c.cfg.MaxOutputTokens
		if c.cfg.Effort != "" {
			b["reasoning"] = obj{"effort": c.cfg.Effort}
		}
	} else {
		b["max_completion_tokens"] = c.cfg.MaxOutputTokens
		if c.cfg.Effort != "" {
			b["reasoning_effort"] = c.cfg.Effort
		}
	}
	var tools []obj
	if len(req.Tools) > 0 {
		tools = make([]obj, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = obj{"type": "function", "function": obj{"name": t.Name, "description": t.Description, "parameters": t.Schema}}
		}
		b["tools"] = tools
		b["tool_choice"] = "auto"
	}
	if d.openRouter && c.cfg.PromptCaching && strings.HasPrefix(req.Model, "anthropic/") {
		openRouterCache(msgs, tools)
	}
	if d.databricks {
		delete(b, "model")
	}
	return json.Marshal(b)
}

// openRouterCache adds Anthropic cache_control breakpoints the OpenRouter
// way: the system message, the last two user messages with string content
// (image-only array messages are skipped and not counted) and the last tool.
func openRouterCache(msgs []obj, tools []obj) {
	cached := func(s string) []obj {
		blk := textBlock(s)
		blk["cache_control"] = ephemeral
		return []obj{blk}
	}
	if len(msgs) > 0 && msgs[0]["role"] == "system" {
		if s, ok := msgs[0]["content"].(string); ok {
			msgs[0]["content"] = cached(s)
		}
	}
	n := 0
	for i := len(msgs) - 1; i > 0 && n < 2; i-- {
		if msgs[i]["role"] != "user" {
			continue
		}
		if s, ok := msgs[i]["content"].(string); ok {
			msgs[i]["content"] = cached(s)
			n++
		}
	}
	if len(tools) > 0 {
		tools[len(tools)-1]["function"].(obj)["cache_control"] = ephemeral
	}
}

// chatMessages encodes history. Images from a run of tool results are sent
// as one user message after the run, keeping tool messages contiguous.
func chatMessages(system string, hist []Message, replayDetails bool) []obj {
	msgs := make([]obj, 0, len(hist)+1)
	msgs = append(msgs, obj{"role": "system", "content": system})
	var images []obj
	flush := func() {
		if len(images) > 0 {
			msgs = append(msgs, obj{"role": "user", "content": images})
			images = nil
		}
	}
	for _, m := range hist {
		switch m.Role {
		case RoleUser:
			flush()
			if len(m.Images) == 0 {
				msgs = append(msgs, obj{"role": "user", "content": m.Text})
				break
			}
			content := []obj{{"type": "text", "text": m.Text}}
			for _, im := range m.Images {
				content = append(content, obj{"type": "image_url", "image_url": obj{"url": "data:" + im.MIME + ";base64," + im.Data}})
			}
			msgs = append(msgs, obj{"role": "user", "content": content})
		case RoleAssistant:
			flush()
			a := obj{"role": "assistant", "content": m.Text}
			if replayDetails && len(m.ReasoningDetails) > 0 {
				a["reasoning_details"] = m.ReasoningDetails
			}
			if m.ReasoningContent != "" {
				a["reasoning_content"] = m.ReasoningContent
			}
			if len(m.Calls) > 0 {
				calls := make([]obj, len(m.Calls))
				for i, tc := range m.Calls {
					co := obj{}
					for k, v := range tc.Extra {
						co[k] = v
					}
					co["id"] = tc.ID
					co["type"] = "function"
					co["function"] = obj{"name": tc.Name, "arguments": string(tc.Args)}
					calls[i] = co
				}
				a["tool_calls"] = calls
			}
			msgs = append(msgs, a)
		case RoleTool:
			r := m.Result
			msgs = append(msgs, obj{"role": "tool", "tool_call_id": r.CallID, "content": resultText(r)})
			for _, p := range r.Parts {
				if p.Image != nil {
					images = append(images, obj{"type": "image_url", "image_url": obj{"url": "data:" + p.Image.MIME + ";base64," + p.Image.Data}})
				}
			}
		}
	}
	flush()
	return msgs
}

func (d chatDialect) summaryBody(c *Client, model, system, user string) ([]byte, error) {
	b := obj{"model": model, "stream": false, "messages": []obj{
		{"role": "system", "content": system}, {"role": "user", "content": user}}}
	if d.openRouter {
		b["max_tokens"] = SummaryMaxTokens
	} else {
		b["max_completion_tokens"] = SummaryMaxTokens
	}
	if d.databricks {
		delete(b, "model")
	}
	return json.Marshal(b)
}

type chatReply struct {
	Choices []chatChoice    `json:"choices"`
	Usage   *chatUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type chatChoice struct {
	Message      *chatMessage    `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Error        json.RawMessage `json:"error"`
}

type chatMessage struct {
	Content          json.RawMessage   `json:"content"`
	ReasoningContent string            `json:"reasoning_content"`
	Reasoning        string            `json:"reasoning"`
	ReasoningDetails json.RawMessage   `json:"reasoning_details"`
	ToolCalls        []json.RawMessage `json:"tool_calls"`
}

type chatUsage struct {
	Prompt     *json.Number `json:"prompt_tokens"`
	Completion *json.Number `json:"completion_tokens"`
	Total      *json.Number `json:"total_tokens"`
	CacheRead  *json.Number `json:"cache_read_input_tokens"`
	Details    *struct {
		Cached *json.Number `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *chatUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{Input: u64(u.Prompt), Output: u64(u.Completion), Total: u64(u.Total), Cached: u64(u.CacheRead)}
	if out.Cached == nil && u.Details != nil {
		out.Cached = u64(u.Details.Cached)
	}
	return out
}

// providerError renders an in-band error object.
func providerError(raw json.RawMessage) *Error {
	var e struct {
		Code     json.RawMessage `json:"code"`
		Message  string          `json:"message"`
		Metadata struct {
			ErrorType string `json:"error_type"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &e)
	code := strings.Trim(string(e.Code), `"`)
	if code == "" || code == "null" {
		code = "unknown"
	}
	if e.Metadata.ErrorType != "" {
		code += ", " + e.Metadata.ErrorType
	}
	return errorf("provider error (%s): %s", code, e.Message)
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func (d chatDialect) parse(data []byte) (*Response, error) {
	var r chatReply
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, errorf("json: %v", err)
	}
	return r.response()
}

func (r *chatReply) response() (*Response, error) {
	if !isNull(r.Error) {
		return nil, providerError(r.Error)
	}
	if len(r.Choices) == 0 {
		return nil, errorf("provider: response has no choices")
	}
	ch := r.Choices[0]
	if ch.FinishReason == "error" {
		return nil, providerError(ch.Error)
	}
	if ch.Message == nil {
		return nil, errorf("provider: response choice has no message")
	}
	m := ch.Message
	out := &Response{Stop: mapStop(ch.FinishReason), Usage: r.Usage.usage(), ReasoningContent: m.ReasoningContent}
	var blockReasoning []string
	if len(m.Content) > 0 && m.Content[0] == '[' {
		var blocks []struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Summary []struct {
				Text string `json:"text"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return nil, errorf("json: content: %v", err)
		}
		var text []string
		for _, b := range blocks {
			switch b.Type {
			case "text", "", "output_text":
				text = append(text, b.Text)
			case "reasoning":
				if len(b.Summary) > 0 {
					for _, s := range b.Summary {
						blockReasoning = append(blockReasoning, s.Text)
					}
				} else if b.Text != "" {
					blockReasoning = append(blockReasoning, b.Text)
				}
			}
		}
		out.Text = strings.Join(text, "")
	} else if !isNull(m.Content) {
		if err := json.Unmarshal(m.Content, &out.Text); err != nil {
			return nil, errorf("json: content: %v", err)
		}
	}
	switch {
	case m.ReasoningContent != "":
		out.Reasoning = m.ReasoningContent
	case m.Reasoning != "":
		out.Reasoning = m.Reasoning
	default:
		out.Reasoning = strings.Join(blockReasoning, "\n")
	}
	if t := bytes.TrimSpace(m.ReasoningDetails); len(t) > 0 && t[0] == '[' {
		out.ReasoningDetails = bytes.Clone(t)
	}
	for _, raw := range m.ToolCalls {
		tc, err := decodeChatCall(raw)
		if err != nil {
			return nil, err
		}
		out.Calls = append(out.Calls, tc)
	}
	return out, nil
}

func decodeChatCall(raw json.RawMessage) (ToolCall, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return ToolCall{}, errorf("json: tool_call: %v", err)
	}
	var tc ToolCall
	_ = json.Unmarshal(fields["id"], &tc.ID)
	var fn struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(fields["function"], &fn)
	tc.Name = fn.Name
	args := []byte(fn.Arguments)
	if len(args) > 0 && args[0] == '"' {
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return ToolCall{}, errorf("json: tool_call arguments: %v", err)
		}
		args = []byte(s)
	}
	var err error
	if tc.Args, err = parseArgs(args); err != nil {
		return ToolCall{}, err
	}
	for k, v := range fields {
		if k == "id" || k == "type" || k == "function" || k == "index" {
			continue
		}
		if tc.Extra == nil {
			tc.Extra = map[string]json.RawMessage{}
		}
		tc.Extra[k] = v
	}
	return tc, nil
}

func nonEmpty(s *string) bool { return s != nil && *s != "" }

// stream assembles chat.completion.chunk events into a non-streamed reply
// object and parses that.
func (d chatDialect) stream(sr *sseReader, req *Request) (*Response, error) {
	type callAcc struct {
		id, name string
		args     strings.Builder
		extra    map[string]json.RawMessage
	}
	var (
		text, reasoning, reasoningContent strings.Builder
		calls                             []*callAcc
		finish                            string
		usage                             *chatUsage
		details                           detailsMerger
	)
	for {
		ev, err := sr.next()
		if err != nil {
			return nil, err
		}
		if string(bytes.TrimSpace(ev.data)) == "[DONE]" {
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content          *string           `json:"content"`
					ReasoningContent *string           `json:"reasoning_content"`
					Reasoning        *string           `json:"reasoning"`
					ReasoningDetails []json.RawMessage `json:"reasoning_details"`
					ToolCalls        []json.RawMessage `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
				Error        json.RawMessage `json:"error"`
			} `json:"choices"`
			Usage *chatUsage      `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(ev.data, &chunk); err != nil {
			return nil, errorf("json: stream chunk: %v", err)
		}
		if !isNull(chunk.Error) {
			return nil, providerError(chunk.Error)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
			sr.progressed()
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		ch := chunk.Choices[0]
		if dl := ch.Delta; ch.FinishReason != nil || len(dl.ToolCalls) > 0 || len(dl.ReasoningDetails) > 0 ||
			nonEmpty(dl.Content) || nonEmpty(dl.ReasoningContent) || nonEmpty(dl.Reasoning) {
			sr.progressed() // an empty delta is a keep-alive
		}
		if ch.FinishReason != nil && *ch.FinishReason == "error" {
			return nil, providerError(ch.Error)
		}
		if ch.FinishReason != nil {
			finish = *ch.FinishReason
		}
		dl := ch.Delta
		if dl.Content != nil && *dl.Content != "" {
			text.WriteString(*dl.Content)
			req.OnText(*dl.Content)
		}
		if dl.ReasoningContent != nil && *dl.ReasoningContent != "" {
			reasoningContent.WriteString(*dl.ReasoningContent)
			req.OnThought(*dl.ReasoningContent)
		} else if dl.Reasoning != nil && *dl.Reasoning != "" {
			reasoning.WriteString(*dl.Reasoning)
			req.OnThought(*dl.Reasoning)
		}
		for _, rd := range dl.ReasoningDetails {
			details.add(rd)
		}
		for _, raw := range dl.ToolCalls {
			var f map[string]json.RawMessage
			if err := json.Unmarshal(raw, &f); err != nil {
				return nil, errorf("json: tool_call delta: %v", err)
			}
			idx := 0
			_ = json.Unmarshal(f["index"], &idx)
			if idx < 0 || idx >= maxStreamBlocks {
				return nil, errorf("provider: tool_call index %d out of range", idx)
			}
			for len(calls) <= idx {
				calls = append(calls, &callAcc{})
			}
			c := calls[idx]
			var id string
			if json.Unmarshal(f["id"], &id) == nil && id != "" {
				c.id = id
			}
			var fn struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			}
			_ = json.Unmarshal(f["function"], &fn)
			c.name += fn.Name
			c.args.WriteString(fn.Arguments)
			for k, v := range f {
				if k == "id" || k == "type" || k == "function" || k == "index" {
					continue
				}
				if c.extra == nil {
					c.extra = map[string]json.RawMessage{}
				}
				c.extra[k] = v
			}
		}
	}
	msg := obj{"content": text.String()}
	if reasoningContent.Len() > 0 {
		msg["reasoning_content"] = reasoningContent.String()
	}
	if reasoning.Len() > 0 {
		msg["reasoning"] = reasoning.String()
	}
	if dd := details.result(); dd != nil {
		msg["reasoning_details"] = dd
	}
	if len(calls) > 0 {
		tcs := make([]obj, 0, len(calls))
		for _, c := range calls {
			co := obj{}
			for k, v := range c.extra {
				co[k] = v
			}
			co["id"] = c.id
			co["type"] = "function"
			co["function"] = obj{"name": c.name, "arguments": c.args.String()}
			tcs = append(tcs, co)
		}
		msg["tool_calls"] = tcs
	}
	whole, err := json.Marshal(obj{"choices": []obj{{"message": msg, "finish_reason": finish}}, "usage": usage})
	if err != nil {
		return nil, errorf("json: %v", err)
	}
	return d.parse(whole)
}

// detailsMerger merges OpenRouter reasoning_details fragments that share a
// (type, index): text, summary and data concatenate, the last non-empty
// signature and other fields win. An entry that arrived in one piece keeps
// its exact bytes.
type detailsMerger struct {
	order  []string
	byKey  map[string]map[string]json.RawMessage
	raw    map[string]json.RawMessage
	merged map[string]bool
}

func (m *detailsMerger) add(raw json.RawMessage) {
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil {
		return
	}
	var typ string
	_ = json.Unmarshal(f["type"], &typ)
	key := typ + "\x00" + string(f["index"])
	if m.byKey == nil {
		m.byKey = map[string]map[string]json.RawMessage{}
		m.raw = map[string]json.RawMessage{}
		m.merged = map[string]bool{}
	}
	cur, ok := m.byKey[key]
	if !ok {
		m.byKey[key] = f
		m.raw[key] = bytes.Clone(raw)
		m.order = append(m.order, key)
		return
	}
	m.merged[key] = true
	for k, v := range f {
		switch k {
		case "text", "summary", "data":
			var a, b string
			if json.Unmarshal(cur[k], &a) == nil && json.Unmarshal(v, &b) == nil {
				enc, _ := json.Marshal(a + b)
				cur[k] = enc
				continue
			}
			cur[k] = v
		case "signature":
			var s string
			if json.Unmarshal(v, &s) == nil && s != "" {
				cur[k] = v
			}
		default:
			cur[k] = v
		}
	}
}

func (m *detailsMerger) result() []json.RawMessage {
	if len(m.order) == 0 {
		return nil
	}
	out := make([]json.RawMessage, len(m.order))
	for i, k := range m.order {
		if !m.merged[k] {
			out[i] = m.raw[k]
			continue
		}
		enc, _ := json.Marshal(m.byKey[k])
		out[i] = enc
	}
	return out
}

// databricksV2Route picks the AI-gateway dialect for a model name by its
// lowercase alphanumeric segments.
func databricksV2Route(model string) dialect {
	segs := strings.FieldsFunc(strings.ToLower(model), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	for _, s := range segs {
		if strings.HasPrefix(s, "gpt") || s == "sol" || s == "luna" || s == "terra" {
			return responsesDialect{path: "/ai-gateway/openai/v1/responses"}
		}
	}
	for _, s := range segs {
		switch s {
		case "claude", "opus", "sonnet", "haiku", "mythos", "fable":
			return anthropicDialect{path: "/ai-gateway/anthropic/v1/messages", bearer: true}
		}
	}
	return chatDialect{path: "/ai-gateway/mlflow/v1/chat/completions"}
}
