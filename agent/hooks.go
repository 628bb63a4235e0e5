package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"buzzbox/agent/llm"
)

// Lifecycle hooks: tools whose bare name starts with "_", called only by
// the agent, never listed to the model.
const (
	hookStop        = "_Stop"
	hookPostCompact = "_PostCompact"
)

// replyReminder is the reply guard's objection. Tests pin its key phrases.
const replyReminder = "Reminder: nobody sees your assistant text or reasoning — they are never shown to anyone. " +
	"Finished work, answers and blockers exist for the people waiting only once you publish them with `buzz messages send` " +
	"(or acknowledge with `buzz reactions add`) through the shell tool, or with the send_message (add_reaction) tool. If you have already posted, or silence is genuinely correct here, " +
	"you may end the turn now."

type hookOutput struct{ server, text string }

// callHooks calls hook on every allowed server that registered it, in
// parallel, each within the hook timeout and deaf to the session's cancel.
// Errors, timeouts, isError results and blank text are dropped (fail-open).
func (t *turn) callHooks(hook string) []hookOutput {
	targets := t.s.reg.HookTargets(hook)
	if len(targets) == 0 {
		return nil
	}
	outs := make([]hookOutput, len(targets))
	var wg sync.WaitGroup
	for i, h := range targets {
		wg.Add(1)
		// Ends within the hook timeout.
		go func() {
			defer wg.Done()
			res, err := t.s.reg.CallHook(context.Background(), h, t.a.opts.HookTimeout)
			if err != nil || res.IsError {
				if err != nil {
					t.a.log.Info("hook ignored", "hook", hook, "server", h.Server, "err", err)
				}
				return
			}
			parts := shapeResult(res.Content, maxHookResultBytes, maxHookResultBytes)
			text := strings.TrimSpace(lossyText(parts))
			if text != "" {
				outs[i] = hookOutput{server: h.Server, text: text}
			}
		}()
	}
	wg.Wait()
	var kept []hookOutput
	for _, o := range outs {
		if o.text != "" {
			kept = append(kept, o)
		}
	}
	return kept
}

// endTurnGate runs when the model wants to end the turn. Objections from
// _Stop hooks and the reply guard send it back for another round, within
// the per-prompt rejection budget. It reports whether the loop continues.
func (t *turn) endTurnGate(ctx context.Context) bool {
	o := &t.a.opts
	if t.stopRejections >= o.StopMaxRejections || ctx.Err() != nil {
		return false
	}
	objections := t.callHooks(hookStop)
	if o.RequireReply && !t.replySeen && t.nags < maxReplyNags {
		t.nags++
		objections = append(objections, hookOutput{server: "buzz-agent", text: replyReminder})
	}
	if len(objections) == 0 {
		return false
	}
	t.stopRejections++
	for _, ob := range objections {
		id := fmt.Sprintf("buzz_hook__Stop_%s_%d", ob.server, t.a.hookSeq.Add(1))
		call := llm.ToolCall{ID: id, Name: ob.server + "__" + hookStop, Args: json.RawMessage("{}")}
		payload, _ := json.Marshal(map[string]string{"hook": hookStop, "server": ob.server, "text": ob.text})
		t.history = append(t.history,
			llm.Message{Role: llm.RoleAssistant, Calls: []llm.ToolCall{call}},
			call.Result([]llm.Part{{Text: string(payload)}}, false))
	}
	t.a.log.Info("end of turn objected", "session", t.s.id, "objections", len(objections), "rejections", t.stopRejections)
	return true
}

// isReplyAttempt reports whether c looks like publishing to Buzz: a
// registered non-hook "<server>__shell" call whose string "command" contains
// "messages send" (send-diff included) or "reactions add", or a registered
// call of buzz-dev-mcp's workspace tools "<server>__send_message" and
// "<server>__add_reaction", which do the same without the shell.
func (t *turn) isReplyAttempt(c llm.ToolCall) bool {
	if !t.s.reg.Has(c.Name) {
		return false
	}
	if strings.HasSuffix(c.Name, "__send_message") || strings.HasSuffix(c.Name, "__add_reaction") {
		return true
	}
	if !strings.HasSuffix(c.Name, "__shell") {
		return false
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(c.Args, &args) != nil {
		return false
	}
	var cmd string
	if json.Unmarshal(args["command"], &cmd) != nil {
		return false
	}
	return strings.Contains(cmd, "messages send") || strings.Contains(cmd, "reactions add")
}
