package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"buzzbox/agent/llm"
	"buzzbox/agent/mcpclient"
	"buzzbox/internal/acp"
)

// reflectSuffix follows every error tool result in the next request.
const reflectSuffix = "\n\n[Reflect] Identify the cause of this error and change your approach before retrying; do not repeat the same call unchanged."

// timeoutAdvice follows a tool timeout.
const timeoutAdvice = " The tool was stopped and its server restarted; try a faster approach, smaller steps, or run long work in the background."

// turn is one session/prompt in progress. Only its own goroutine touches
// it, except the tool-call workers, which report through execute's mutex.
type turn struct {
	s     *Session
	a     *Agent
	model string
	runID string

	history    []llm.Message
	original   string
	handoffs   int
	measured   *uint64
	measuredAt int

	round          int
	stopRejections int
	replySeen      bool
	nags           int
	sawUsage       bool
	lastUsage      llm.Usage
	// recoveries counts forced handoffs after context-window errors in this
	// turn; forceBudget, when set, makes the next gate hand off with that
	// history budget.
	recoveries  int
	forceBudget int
}

// run executes the turn loop for one user prompt and its images.
func (t *turn) run(ctx context.Context, text string, images []llm.Image) (acp.StopReason, error) {
	opts := &t.a.opts
	if t.original == "" {
		t.original = text
	}
	t.history = append(t.history, llm.Message{Role: llm.RoleUser, Text: text, Images: images})
	for {
		if opts.MaxRounds > 0 && t.round >= opts.MaxRounds {
			return acp.StopMaxTurnRequests, nil
		}
		if ctx.Err() != nil {
			return acp.StopCancelled, nil
		}
		for _, st := range t.s.drainSteers() {
			t.history = append(t.history, llm.User(st))
		}
		switch t.handoffGate(ctx) {
		case gateCancelled:
			return acp.StopCancelled, nil
		case gateSkipped:
			if h, changed := evict(t.history, opts.MaxHistoryBytes); changed {
				before := len(t.history)
				t.history = h
				t.a.log.Info(fmt.Sprintf("history truncated %d -> %d items (%d bytes)", before, len(h), totalBytes(h, wireBytes)), "session", t.s.id)
			}
		}
		tools := t.tools()
		t.round++
		resp, err := t.complete(ctx, tools)
		if ctx.Err() != nil {
			return acp.StopCancelled, nil
		}
		if err != nil {
			if t.recoverContextWindow(err) {
				t.round-- // the rejected call is refunded
				continue
			}
			return "", err
		}
		if len(resp.Calls) == 0 {
			if resp.Stop == llm.StopToolUse {
				return "", errors.New("llm: provider: stop=tool_use but zero tool_calls")
			}
			t.history = append(t.history, resp.Assistant(nil))
			switch resp.Stop {
			case llm.StopMaxTokens:
				return acp.StopMaxTokens, nil
			case llm.StopRefusal:
				return acp.StopRefusal, nil
			}
			if t.endTurnGate(ctx) {
				continue
			}
			if t.s.steerPending() {
				continue // a steer came during the last call: it gets its round
			}
			return acp.StopEndTurn, nil
		}
		calls := resp.Calls
		if len(calls) > maxToolCallsPerTurn {
			t.a.log.Warn("too many tool calls in one response; extras dropped", "session", t.s.id, "calls", len(calls), "limit", maxToolCallsPerTurn)
			calls = calls[:maxToolCallsPerTurn]
		}
		if opts.RequireReply && !t.replySeen {
			for _, c := range calls {
				if t.isReplyAttempt(c) {
					t.replySeen = true
					break
				}
			}
		}
		t.history = append(t.history, resp.Assistant(calls))
		if t.execute(ctx, calls) {
			return acp.StopCancelled, nil
		}
	}
}

// recoverContextWindow arranges a forced handoff after the provider said
// the request does not fit its context window: the summary quotes at most
// half, a quarter, an eighth of the rejected history (never below
// minRecoveryBudget), up to maxContextRecoveries times per turn.
func (t *turn) recoverContextWindow(err error) bool {
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.KindContextWindow || t.recoveries >= maxContextRecoveries {
		return false
	}
	t.recoveries++
	rejected := totalBytes(t.history, wireBytes)
	t.forceBudget = max(rejected>>t.recoveries, minRecoveryBudget)
	t.measured = nil
	t.a.log.Warn("request over the context window; summarising and retrying", "session", t.s.id, "attempt", t.recoveries, "history_budget", t.forceBudget)
	return true
}

// tools lists what the model may call this round.
func (t *turn) tools() []llm.Tool {
	infos := t.s.reg.Tools()
	tools := make([]llm.Tool, 0, len(infos)+1)
	for _, ti := range infos {
		tools = append(tools, llm.Tool{Name: ti.Name, Description: ti.Description, Schema: ti.Schema})
	}
	if len(t.s.skills) > 0 {
		tools = append(tools, loadSkillTool())
	}
	return tools
}

// complete makes one LLM call, forwarding deltas and sending keepalives.
func (t *turn) complete(ctx context.Context, tools []llm.Tool) (*llm.Response, error) {
	req := &llm.Request{Model: t.model, System: t.s.system, Messages: t.history, Tools: tools,
		OnText:    func(s string) { t.chunk(acp.UpdateAgentMessageChunk, s) },
		OnThought: func(s string) { t.chunk(acp.UpdateAgentThoughtChunk, s) },
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	// Sends keepalives until the call returns (the first tick is skipped).
	go func() {
		defer wg.Done()
		tk := time.NewTicker(keepaliveEvery)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				t.s.update(map[string]any{"sessionUpdate": acp.UpdateKeepalive})
			}
		}
	}()
	resp, err := t.a.llm.Complete(ctx, req)
	close(done)
	wg.Wait()
	if err != nil || ctx.Err() != nil {
		return nil, err
	}
	if resp.Usage.Any() {
		t.sawUsage = true
		t.lastUsage = resp.Usage
		t.measured = resp.Usage.Input
		if t.measured != nil {
			t.measuredAt = totalBytes(t.history, pressureBytes)
		}
		t.s.mu.Lock()
		t.s.usage.add(resp.Usage)
		t.s.mu.Unlock()
		t.s.emitUsage(resp.Usage, t.model)
	}
	if !resp.Streamed {
		if resp.Reasoning != "" {
			t.chunk(acp.UpdateAgentThoughtChunk, resp.Reasoning)
		}
		if resp.Text != "" {
			t.chunk(acp.UpdateAgentMessageChunk, resp.Text)
		}
	}
	return resp, nil
}

// chunk sends a text or thought chunk. Chunks of one round share a
// messageId ("<runId>-message-<round>", "<runId>-thought-<round>") so a
// client can tell the rounds' messages apart.
func (t *turn) chunk(kind, text string) {
	if text == "" {
		return
	}
	part := "message"
	if kind == acp.UpdateAgentThoughtChunk {
		part = "thought"
	}
	t.s.update(acp.Update{SessionUpdate: kind, Content: &acp.ContentBlock{Type: "text", Text: text},
		MessageID: fmt.Sprintf("%s-%s-%d", t.runID, part, t.round)})
}

// callResult is the outcome of one tool call before it enters history.
type callResult struct {
	parts   []llm.Part
	isError bool
	done    bool
}

// execute runs one response's tool calls and appends their results in call
// order. It reports whether the turn was cancelled.
func (t *turn) execute(ctx context.Context, calls []llm.ToolCall) bool {
	opts := &t.a.opts
	results := make([]callResult, len(calls))
	announced := make([]bool, len(calls))
	var mu sync.Mutex // guards results and announced once workers start
	failed := func(i int, msg string) {
		results[i] = callResult{parts: []llm.Part{{Text: msg}}, isError: true, done: true}
		t.s.update(acp.Update{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: calls[i].ID, Status: acp.StatusFailed, RawOutput: map[string]string{"error": msg}})
	}
	finish := func(cancelled bool) bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range calls {
			if !results[i].done {
				if announced[i] {
					failed(i, "cancelled")
				} else {
					results[i] = callResult{parts: []llm.Part{{Text: "cancelled"}}, isError: true, done: true}
				}
			}
			r := results[i]
			parts := r.parts
			if r.isError {
				parts = append(parts[:len(parts):len(parts)], llm.Part{Text: reflectSuffix})
			}
			t.history = append(t.history, calls[i].Result(parts, r.isError))
		}
		return cancelled
	}

	var runnable []int
	for i, c := range calls {
		if ctx.Err() != nil {
			return finish(true)
		}
		t.s.update(acp.Update{SessionUpdate: acp.UpdateToolCall, ToolCallID: c.ID, Title: c.Name, Kind: "other", Status: acp.StatusPending, RawInput: c.Args})
		announced[i] = true
		switch {
		case c.Name == loadSkillName && len(t.s.skills) > 0:
			t.s.update(acp.Update{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: c.ID, Status: acp.StatusInProgress})
			text, isErr := runLoadSkill(t.s.skills, c.Args)
			results[i] = callResult{parts: []llm.Part{{Text: text}}, isError: isErr, done: true}
			t.completed(c.ID, results[i].parts, isErr)
		case !t.s.reg.Has(c.Name):
			failed(i, "unknown tool: "+c.Name)
		default:
			runnable = append(runnable, i)
		}
	}

	sem := make(chan struct{}, opts.MaxParallelTools)
	var wg sync.WaitGroup
	for _, i := range runnable {
		wg.Add(1)
		// Ends when the call returns; a cancelled ctx makes it return at once.
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			c := calls[i]
			if cmd := t.s.shellCommand(c); cmd != "" {
				if rule := matchRule(opts.ApprovalRules, cmd); rule != "" {
					if ok, why := t.s.approve(ctx, c, cmd, rule); !ok {
						mu.Lock()
						defer mu.Unlock()
						if !results[i].done {
							failed(i, rejectedText(cmd, rule, why))
						}
						return
					}
				}
			}
			t.s.update(acp.Update{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: c.ID, Status: acp.StatusInProgress})
			res, err := t.s.reg.Call(ctx, c.Name, c.Args, opts.ToolTimeout)
			mu.Lock()
			defer mu.Unlock()
			if results[i].done {
				return // sealed by the cancel path
			}
			if err == nil {
				parts := shapeResult(res.Content, opts.MaxToolResultText, maxToolResultBytes)
				results[i] = callResult{parts: parts, isError: res.IsError, done: true}
				t.completed(c.ID, parts, res.IsError)
				return
			}
			var ce *mcpclient.CallError
			if !errors.As(err, &ce) {
				failed(i, "mcp: "+err.Error())
				return
			}
			switch ce.Kind {
			case mcpclient.CallRejected:
				parts := []llm.Part{{Text: truncateMiddle("Tool call rejected: "+ce.Msg, opts.MaxToolResultText)}}
				results[i] = callResult{parts: parts, isError: true, done: true}
				t.completed(c.ID, parts, true)
			case mcpclient.CallTimeout:
				failed(i, fmt.Sprintf("tool: timeout after %ds.", int(opts.ToolTimeout.Seconds()))+timeoutAdvice)
			case mcpclient.CallCancelled:
				failed(i, "cancelled")
			default:
				failed(i, ce.Msg)
			}
		}()
	}
	all := make(chan struct{})
	// Ends when every worker has returned.
	go func() {
		wg.Wait()
		close(all)
	}()
	select {
	case <-all:
	case <-ctx.Done():
		tm := time.NewTimer(cancelDrain)
		select {
		case <-all:
		case <-tm.C:
			t.a.log.Warn("tool calls still running after cancel; abandoning them", "session", t.s.id)
		}
		tm.Stop()
	}
	return finish(ctx.Err() != nil)
}

// completed reports a finished call (even an isError one).
func (t *turn) completed(id string, parts []llm.Part, isError bool) {
	t.s.update(acp.Update{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: id, Status: acp.StatusCompleted,
		ToolContent: []acp.ToolCallContent{{Type: "content", Content: &acp.ContentBlock{Type: "text", Text: lossyText(parts)}}},
		RawOutput:   map[string]bool{"isError": isError}})
}
