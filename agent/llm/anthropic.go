package llm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropicDialect is the Anthropic Messages API: POST {base}/v1/messages.
type anthropicDialect struct {
	// path replaces /v1/messages (Databricks AI gateway routes).
	path string
	// bearer authenticates with Authorization instead of x-api-key.
	bearer bool
}

func (a anthropicDialect) url(c *Client, _ string) string {
	if a.path != "" {
		return c.cfg.BaseURL + a.path
	}
	return c.cfg.BaseURL + "/v1/messages"
}

func (a anthropicDialect) headers(c *Client, h http.Header) {
	if a.bearer {
		h.Set("Authorization", "Bearer "+c.cfg.APIKey)
	} else {
		h.Set("x-api-key", c.cfg.APIKey)
	}
	v := c.cfg.APIVersion
	if v == "" {
		v = "2023-06-01"
	}
	h.Set("anthropic-version", v)
}

type obj = map[string]any

var ephemeral = obj{"type": "ephemeral"}

func textBlock(s string) obj { return obj{"type": "text", "text": s} }

func (a anthropicDialect) body(c *Client, req *Request, stream bool) ([]byte, error) {
	thinking, outputCfg := anthropicThinking(req.Model, c.cfg.Effort, c.cfg.MaxOutputTokens)
	msgs := anthropicMessages(req.Messages, thinking != nil)
	b := obj{"model": req.Model, "max_tokens": c.cfg.MaxOutputTokens, "messages": msgs}
	if strings.TrimSpace(req.System) != "" {
		if c.cfg.PromptCaching {
			sys := textBlock(req.System)
			sys["cache_control"] = ephemeral
			b["system"] = []obj{sys}
		} else {
			b["system"] = req.System
		}
	}
	if c.cfg.PromptCaching {
		for i := max(0, len(msgs)-2); i < len(msgs); i++ {
			content := msgs[i]["content"].([]obj)
			content[len(content)-1]["cache_control"] = ephemeral
		}
	}
	if len(req.Tools) > 0 {
		tools := make([]obj, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = obj{"name": t.Name, "description": t.Description, "input_schema": t.Schema}
		}
		b["tools"] = tools
	}
	if thinking != nil {
		b["thinking"] = thinking
	}
	if outputCfg != nil {
		b["output_config"] = outputCfg
	}
	if stream {
		b["stream"] = true
	}
	return json.Marshal(b)
}

// anthropicMessages encodes history: consecutive tool results go into one
// user message, empty assistant turns and blank text blocks are left out.
func anthropicMessages(hist []Message, withThinking bool) []obj {
	msgs := make([]obj, 0, len(hist))
	var results []obj
	flush := func() {
		if len(results) > 0 {
			msgs = append(msgs, obj{"role": "user", "content": results})
			results = nil
		}
	}
	for _, m := range hist {
		switch m.Role {
		case RoleUser:
			flush()
			text := m.Text
			if strings.TrimSpace(text) == "" {
				text = "(empty message)"
			}
			content := []obj{textBlock(text)}
			for _, im := range m.Images {
				content = append(content, obj{"type": "image", "source": obj{"type": "base64", "media_type": im.MIME, "data": im.Data}})
			}
			msgs = append(msgs, obj{"role": "user", "content": content})
		case RoleAssistant:
			flush()
			var content []obj
			if withThinking {
				for _, t := range m.Thinking {
					var blk obj
					if json.Unmarshal(t, &blk) == nil {
						content = append(content, blk)
					}
				}
			}
			if strings.TrimSpace(m.Text) != "" {
				content = append(content, textBlock(m.Text))
			}
			for _, tc := range m.Calls {
				content = append(content, obj{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": tc.Args})
			}
			if len(content) == 0 {
				continue
			}
			msgs = append(msgs, obj{"role": "assistant", "content": content})
		case RoleTool:
			r := m.Result
			var parts []obj
			for _, p := range r.Parts {
				if p.Image != nil {
					parts = append(parts, obj{"type": "image", "source": obj{"type": "base64", "media_type": p.Image.MIME, "data": p.Image.Data}})
				} else if strings.TrimSpace(p.Text) != "" {
					parts = append(parts, textBlock(p.Text))
				}
			}
			tr := obj{"type": "tool_result", "tool_use_id": r.CallID}
			if len(parts) > 0 {
				tr["content"] = parts
			}
			if r.IsError {
				tr["is_error"] = true
			}
			results = append(results, tr)
		}
	}
	flush()
	return msgs
}

// anthropicThinking picks the thinking fields for model and effort.
func anthropicThinking(model, effort string, maxOut int) (thinking, outputCfg obj) {
	if effort == "" {
		return nil, nil
	}
	m := strings.ToLower(model)
	if i := strings.Index(m, "claude-"); i >= 0 {
		m = m[i:]
	} else if i := strings.Index(m, "gpt-"); i >= 0 {
		m = m[i:]
	}
	switch {
	case strings.HasPrefix(m, "claude-3") || strings.HasPrefix(m, "claude-opus-4-5"):
		level := 32768
		switch effort {
		case "low":
			level = 1024
		case "medium":
			level = 8192
		case "none", "minimal":
			return nil, nil
		}
		budget := min(level, maxOut-1024)
		if budget < 1024 {
			return nil, nil
		}
		return obj{"type": "enabled", "budget_tokens": budget}, nil
	case adaptiveModel(m):
		e := effort
		if e == "xhigh" && !xhighModel(m) {
			e = "high"
		}
		return obj{"type": "adaptive", "display": "summarized"}, obj{"effort": e}
	}
	return nil, nil
}

func adaptiveModel(m string) bool {
	for _, p := range []string{"claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-opus-5",
		"claude-sonnet-4-6", "claude-sonnet-5", "claude-fable-5", "claude-mythos-5", "claude-mythos-preview"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

func xhighModel(m string) bool {
	return strings.HasPrefix(m, "claude-opus-4-7") || strings.HasPrefix(m, "claude-opus-4-8") || strings.HasPrefix(m, "claude-opus-5")
}

func (a anthropicDialect) summaryBody(c *Client, model, system, user string) ([]byte, error) {
	return json.Marshal(obj{"model": model, "max_tokens": SummaryMaxTokens, "system": system,
		"messages": []obj{{"role": "user", "content": []obj{textBlock(user)}}}})
}

type anthropicReply struct {
	Content    []json.RawMessage `json:"content"`
	StopReason string            `json:"stop_reason"`
	Usage      *anthropicUsage   `json:"usage"`
	Type       string            `json:"type"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anthropicUsage struct {
	Input       *json.Number `json:"input_tokens"`
	Output      *json.Number `json:"output_tokens"`
	CacheRead   *json.Number `json:"cache_read_input_tokens"`
	CacheCreate *json.Number `json:"cache_creation_input_tokens"`
}

func (u *anthropicUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	in := addU64(addU64(u64(u.Input), u64(u.CacheRead)), u64(u.CacheCreate))
	return Usage{Input: in, Output: u64(u.Output), Cached: u64(u.CacheRead)}
}

type anthropicBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
}

func (a anthropicDialect) parse(data []byte) (*Response, error) {
	var r anthropicReply
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, errorf("json: %v", err)
	}
	return r.response()
}

func (r *anthropicReply) response() (*Response, error) {
	if r.Type == "error" || r.Error != nil {
		if r.Error != nil {
			return nil, errorf("provider error (%s): %s", r.Error.Type, r.Error.Message)
		}
		return nil, errorf("provider error")
	}
	out := &Response{Stop: mapStop(r.StopReason), Usage: r.Usage.usage()}
	var text, reasoning []string
	for _, raw := range r.Content {
		var b anthropicBlock
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, errorf("json: content block: %v", err)
		}
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "thinking":
			if b.Thinking != "" {
				reasoning = append(reasoning, b.Thinking)
			}
			out.Thinking = append(out.Thinking, raw)
		case "redacted_thinking":
			out.Thinking = append(out.Thinking, raw)
		case "tool_use":
			args, err := parseArgs(b.Input)
			if err != nil {
				return nil, err
			}
			out.Calls = append(out.Calls, ToolCall{ID: b.ID, Name: b.Name, Args: args})
		}
	}
	out.Text = strings.Join(text, "")
	out.Reasoning = strings.Join(reasoning, "\n")
	return out, nil
}

// stream assembles an Anthropic event stream into the same reply object the
// non-streamed API returns, then parses that, so both paths agree.
func (a anthropicDialect) stream(sr *sseReader, req *Request) (*Response, error) {
	type block struct {
		raw     map[string]json.RawMessage
		typ     string
		text    strings.Builder
		json    strings.Builder
		think   strings.Builder
		sig     string
		started bool
	}
	var blocks []*block
	var reply anthropicReply
	var usage anthropicUsage
	get := func(i int) *block {
		if i < 0 || i >= maxStreamBlocks {
			i = maxStreamBlocks // an out-of-range index lands in a scratch block
		}
		for len(blocks) <= i {
			blocks = append(blocks, &block{})
		}
		return blocks[i]
	}
	for {
		ev, err := sr.next()
		if err != nil {
			return nil, err
		}
		var head struct {
			Type    string          `json:"type"`
			Index   int             `json:"index"`
			Message json.RawMessage `json:"message"`
			Block   json.RawMessage `json:"content_block"`
			Delta   json.RawMessage `json:"delta"`
			Usage   *anthropicUsage `json:"usage"`
			Error   *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(ev.data, &head); err != nil {
			return nil, errorf("json: stream event: %v", err)
		}
		switch head.Type {
		case "message_start", "content_block_start", "content_block_delta", "message_delta":
			sr.progressed() // not ping, Anthropic's keep-alive
		}
		switch head.Type {
		case "message_start":
			var m struct {
				Usage *anthropicUsage `json:"usage"`
			}
			if json.Unmarshal(head.Message, &m) == nil && m.Usage != nil {
				usage = *m.Usage
			}
		case "content_block_start":
			b := get(head.Index)
			b.started = true
			if err := json.Unmarshal(head.Block, &b.raw); err != nil {
				return nil, errorf("json: content block: %v", err)
			}
			_ = json.Unmarshal(b.raw["type"], &b.typ)
		case "content_block_delta":
			b := get(head.Index)
			var d struct {
				Type      string `json:"type"`
				Text      string `json:"text"`
				Partial   string `json:"partial_json"`
				Thinking  string `json:"thinking"`
				Signature string `json:"signature"`
			}
			if err := json.Unmarshal(head.Delta, &d); err != nil {
				return nil, errorf("json: delta: %v", err)
			}
			switch d.Type {
			case "text_delta":
				b.text.WriteString(d.Text)
				if d.Text != "" {
					req.OnText(d.Text)
				}
			case "input_json_delta":
				b.json.WriteString(d.Partial)
			case "thinking_delta":
				b.think.WriteString(d.Thinking)
				if d.Thinking != "" {
					req.OnThought(d.Thinking)
				}
			case "signature_delta":
				b.sig = d.Signature
			}
		case "message_delta":
			var d struct {
				StopReason string `json:"stop_reason"`
			}
			_ = json.Unmarshal(head.Delta, &d)
			reply.StopReason = d.StopReason
			if u := head.Usage; u != nil {
				if u.Input != nil {
					usage.Input = u.Input
				}
				if u.Output != nil {
					usage.Output = u.Output
				}
				if u.CacheRead != nil {
					usage.CacheRead = u.CacheRead
				}
				if u.CacheCreate != nil {
					usage.CacheCreate = u.CacheCreate
				}
			}
		case "error":
			e := &Error{Msg: "provider error"}
			if head.Error != nil {
				e.Msg = fmt.Sprintf("provider error (%s): %s", head.Error.Type, head.Error.Message)
				e.retryable = head.Error.Type == "overloaded_error"
			}
			return nil, e
		case "message_stop":
			for _, b := range blocks {
				if !b.started {
					continue
				}
				set := func(k string, v any) {
					enc, _ := json.Marshal(v)
					b.raw[k] = enc
				}
				switch b.typ {
				case "text":
					set("text", b.text.String())
				case "tool_use":
					in := b.json.String()
					if strings.TrimSpace(in) == "" {
						in = "{}"
					}
					b.raw["input"] = json.RawMessage(in)
				case "thinking":
					set("thinking", b.think.String())
					if b.sig != "" {
						set("signature", b.sig)
					}
				}
				enc, err := json.Marshal(b.raw)
				if err != nil {
					return nil, errorf("json: tool input: %v", err)
				}
				reply.Content = append(reply.Content, enc)
			}
			reply.Usage = &usage
			return reply.response()
		}
	}
}
