package llm

import (
	"encoding/json"
	"net/http"
	"strings"
)

// responsesDialect is the OpenAI Responses API: POST {base}/responses.
type responsesDialect struct {
	// path replaces /responses (Databricks AI gateway).
	path string
}

func (d responsesDialect) url(c *Client, _ string) string {
	if d.path != "" {
		return c.cfg.BaseURL + d.path
	}
	return c.cfg.BaseURL + "/responses"
}

func (d responsesDialect) headers(c *Client, h http.Header) {
	h.Set("Authorization", "Bearer "+c.cfg.APIKey)
}

func (d responsesDialect) body(c *Client, req *Request, stream bool) ([]byte, error) {
	var input []obj
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			content := []obj{{"type": "input_text", "text": m.Text}}
			for _, im := range m.Images {
				content = append(content, obj{"type": "input_image", "image_url": "data:" + im.MIME + ";base64," + im.Data})
			}
			input = append(input, obj{"role": "user", "content": content})
		case RoleAssistant:
			if m.Text != "" {
				input = append(input, obj{"role": "assistant", "content": []obj{{"type": "output_text", "text": m.Text}}})
			}
			for _, tc := range m.Calls {
				input = append(input, obj{"type": "function_call", "call_id": tc.ID, "name": tc.Name, "arguments": string(tc.Args)})
			}
		case RoleTool:
			r := m.Result
			input = append(input, obj{"type": "function_call_output", "call_id": r.CallID, "output": resultText(r)})
			var imgs []obj
			for _, p := range r.Parts {
				if p.Image != nil {
					imgs = append(imgs, obj{"type": "input_image", "image_url": "data:" + p.Image.MIME + ";base64," + p.Image.Data})
				}
			}
			if len(imgs) > 0 {
				input = append(input, obj{"role": "user", "content": imgs})
			}
		}
	}
	b := obj{"model": req.Model, "instructions": req.System, "max_output_tokens": c.cfg.MaxOutputTokens, "input": input}
	if c.cfg.Effort != "" {
		b["reasoning"] = obj{"effort": c.cfg.Effort, "summary": "auto"}
	}
	if len(req.Tools) > 0 {
		tools := make([]obj, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = obj{"type": "function", "name": t.Name, "description": t.Description, "parameters": t.Schema, "strict": false}
		}
		b["tools"] = tools
		b["tool_choice"] = "auto"
	}
	if stream {
		b["stream"] = true
	}
	return json.Marshal(b)
}

func (d responsesDialect) summaryBody(c *Client, model, system, user string) ([]byte, error) {
	return json.Marshal(obj{"model": model, "max_output_tokens": SummaryMaxTokens, "instructions": system, "input": user})
}

type responsesReply struct {
	Status            string            `json:"status"`
	Output            []json.RawMessage `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error json.RawMessage `json:"error"`
	Usage *struct {
		Input     *json.Number `json:"input_tokens"`
		Output    *json.Number `json:"output_tokens"`
		Total     *json.Number `json:"total_tokens"`
		CacheRead *json.Number `json:"cache_read_input_tokens"`
		Details   *struct {
			Cached *json.Number `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

func (d responsesDialect) parse(data []byte) (*Response, error) {
	var r responsesReply
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, errorf("json: %v", err)
	}
	return r.response()
}

func (r *responsesReply) response() (*Response, error) {
	if !isNull(r.Error) || r.Status == "failed" {
		return nil, providerError(r.Error)
	}
	out := &Response{}
	if u := r.Usage; u != nil {
		out.Usage = Usage{Input: u64(u.Input), Output: u64(u.Output), Total: u64(u.Total), Cached: u64(u.CacheRead)}
		if out.Usage.Cached == nil && u.Details != nil {
			out.Usage.Cached = u64(u.Details.Cached)
		}
	}
	var text, reasoning []string
	for _, raw := range r.Output {
		var it struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Summary []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, errorf("json: output item: %v", err)
		}
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				if p.Type == "output_text" || p.Type == "text" {
					text = append(text, p.Text)
				}
			}
		case "function_call":
			args, err := parseArgs([]byte(it.Arguments))
			if err != nil {
				return nil, err
			}
			out.Calls = append(out.Calls, ToolCall{ID: it.CallID, Name: it.Name, Args: args})
		case "reasoning":
			for _, s := range it.Summary {
				if (s.Type == "summary_text" || s.Type == "text") && s.Text != "" {
					reasoning = append(reasoning, s.Text)
				}
			}
		}
	}
	out.Text = strings.Join(text, "")
	out.Reasoning = strings.Join(reasoning, "\n")
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		out.Stop = StopMaxTokens
	case r.Status == "incomplete":
		out.Stop = StopOther
	case len(out.Calls) > 0:
		out.Stop = StopToolUse
	default:
		out.Stop = StopEndTurn
	}
	return out, nil
}

// stream forwards text and reasoning deltas and parses the terminal
// response; items seen in output_item.done stand in when a gateway leaves
// the terminal output empty.
func (d responsesDialect) stream(sr *sseReader, req *Request) (*Response, error) {
	var items []json.RawMessage
	for {
		ev, err := sr.next()
		if err != nil {
			return nil, err
		}
		var e struct {
			Type     string          `json:"type"`
			Delta    string          `json:"delta"`
			Item     json.RawMessage `json:"item"`
			Response *responsesReply `json:"response"`
			Code     json.RawMessage `json:"code"`
			Message  string          `json:"message"`
		}
		if err := json.Unmarshal(ev.data, &e); err != nil {
			return nil, errorf("json: stream event: %v", err)
		}
		if strings.HasSuffix(e.Type, ".delta") || strings.HasPrefix(e.Type, "response.output_item.") ||
			strings.HasPrefix(e.Type, "response.content_part.") {
			sr.progressed()
		}
		switch e.Type {
		case "response.output_text.delta", "response.refusal.delta":
			if e.Delta != "" {
				req.OnText(e.Delta)
			}
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			if e.Delta != "" {
				req.OnThought(e.Delta)
			}
		case "response.output_item.done":
			if len(e.Item) > 0 {
				items = append(items, e.Item)
			}
		case "error":
			raw, _ := json.Marshal(obj{"code": e.Code, "message": e.Message})
			return nil, providerError(raw)
		case "response.completed", "response.incomplete", "response.failed":
			if e.Response == nil {
				return nil, errorf("provider: %s without response", e.Type)
			}
			if len(e.Response.Output) == 0 {
				e.Response.Output = items
			}
			return e.Response.response()
		}
	}
}
