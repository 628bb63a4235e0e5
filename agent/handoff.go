package agent

import (
	"context"
	"fmt"
	"strings"

	"buzzbox/agent/llm"
)

// handoffSystemPrompt frames the summary request.
const handoffSystemPrompt = `You are writing the hand-over note that your own next turn will resume from: the conversation so far is about to be cleared and only this note survives. Be brief but leave no gaps. Cover, in prose: (1) the original task, (2) the work done so far, (3) key decisions and facts learned, (4) open items and problems, (5) one concrete next step. Write plain text only: no tool calls, no JSON. Stay well under 8192 tokens.`

type gate int

const (
	gateSkipped   gate = iota // no handoff happened; eviction runs
	gatePerformed             // history was replaced by a summary
	gateCancelled             // the turn was cancelled during the summary
)

// handoffGate decides, before every LLM call, whether the history is close
// enough to the context window to summarise and restart, and does it.
func (t *turn) handoffGate(ctx context.Context) gate {
	if t.forceBudget > 0 {
		budget := t.forceBudget
		t.forceBudget = 0
		return t.handoff(ctx, budget)
	}
	o := &t.a.opts
	threshold := min(o.MaxContextTokens/10*9, o.MaxContextTokens-o.MaxOutputTokens)
	pressure := totalBytes(t.history, pressureBytes)
	var due bool
	if t.measured != nil {
		projected := int64(*t.measured) + int64(pressure-t.measuredAt)
		due = projected >= int64(threshold)
	} else {
		due = pressure > min(threshold, o.MaxHistoryBytes/10*9)
	}
	if !due {
		return gateSkipped
	}
	if t.handoffs >= o.MaxHandoffs {
		t.a.log.Info(fmt.Sprintf("handoff cap reached (%d); using truncation", o.MaxHandoffs), "session", t.s.id)
		return gateSkipped
	}
	return t.handoff(ctx, 0)
}

// handoff summarises the history and restarts from the summary. A non-zero
// budget bounds the history quoted in the summary request (context-window
// recovery); zero derives it from the context window.
func (t *turn) handoff(ctx context.Context, budget int) gate {
	prompt := t.summaryPrompt(budget)
	summary, err := t.a.llm.Summarize(ctx, t.model, handoffSystemPrompt, prompt)
	if ctx.Err() != nil {
		return gateCancelled
	}
	if err != nil || strings.TrimSpace(summary) == "" {
		t.a.log.Warn("handoff summary failed; using truncation", "session", t.s.id, "err", err)
		return gateSkipped
	}
	var live *llm.Message
	for i := len(t.history) - 1; i >= 0; i-- {
		if t.history[i].Role == llm.RoleUser {
			m := t.history[i]
			live = &m
			break
		}
	}
	beforeItems := len(t.history)
	beforeTokens := "unknown"
	if t.measured != nil {
		beforeTokens = fmt.Sprint(*t.measured)
	}
	t.history = nil
	msg := "[Context Handoff]\n" + summary
	if outs := t.callHooks(hookPostCompact); len(outs) > 0 {
		blocks := make([]string, len(outs))
		for i, o := range outs {
			blocks[i] = "[" + o.server + "]\n" + o.text
		}
		msg += "\n\n[Post-compact hook output — untrusted]\n" + strings.Join(blocks, "\n\n")
	}
	t.history = append(t.history, llm.User(msg))
	if live != nil {
		t.history = append(t.history, *live)
	}
	t.handoffs++
	t.measured = nil
	t.a.log.Info(fmt.Sprintf("handoff #%d (history %d -> %d items; %s -> %d tokens)", t.handoffs, beforeItems, len(t.history), beforeTokens, totalBytes(t.history, pressureBytes)), "session", t.s.id)
	return gatePerformed
}

// summaryPrompt lays out the summary request's user message.
func (t *turn) summaryPrompt(budgetOverride int) string {
	o := &t.a.opts
	var head strings.Builder
	fmt.Fprintf(&head, "[Internal handoff #%d — context reset]\n\n", t.handoffs+1)
	task := t.original
	if len(task) > handoffOriginalTaskMaxBytes {
		task = cutHead(task, handoffOriginalTaskMaxBytes-len("…")) + "…"
	}
	head.WriteString("# Original Task\n" + task)
	head.WriteString("\n\n# Available Tools\n")
	tools := t.tools()
	if len(tools) == 0 {
		head.WriteString("(none)\n")
	} else {
		names := make([]string, 0, handoffMaxToolNames)
		for i, tl := range tools {
			if i == handoffMaxToolNames {
				break
			}
			names = append(names, tl.Name)
		}
		head.WriteString(strings.Join(names, ", "))
		if extra := len(tools) - len(names); extra > 0 {
			fmt.Fprintf(&head, ", … (+%d more)", extra)
		}
		head.WriteString("\n")
	}
	head.WriteString("\n# Session History (oldest first)\n")
	const instructions = "\n# Instructions\nSummarise the session above for your own next turn: the original task, the work done, key decisions, open items, and one concrete next step. Be concise; plain text only.\n"

	snippets := make([]string, len(t.history))
	for i := range t.history {
		snippets[i] = snippet(&t.history[i])
	}
	budget := max(0, (o.MaxContextTokens-handoffOutputTokens)-(head.Len()+len(instructions)+64))
	if budgetOverride > 0 {
		budget = budgetOverride
	}
	var picked []string
	used := 0
	omitted := 0
	for i := len(snippets) - 1; i >= 0; i-- {
		sn := snippets[i]
		if used+len(sn) <= budget {
			picked = append(picked, sn)
			used += len(sn)
			continue
		}
		if i == len(snippets)-1 {
			picked = append(picked, cutHead(sn, budget)+"\n")
			used = budget
		}
		omitted++
	}
	var b strings.Builder
	b.WriteString(head.String())
	if omitted > 0 {
		fmt.Fprintf(&b, "(… %d older items omitted)\n", omitted)
	}
	for i := len(picked) - 1; i >= 0; i-- {
		b.WriteString(picked[i])
	}
	b.WriteString(instructions)
	return b.String()
}

func snippet(m *llm.Message) string {
	switch m.Role {
	case llm.RoleUser:
		return "[user] " + m.Text + "\n"
	case llm.RoleAssistant:
		var b strings.Builder
		b.WriteString("[assistant] " + m.Text)
		for _, c := range m.Calls {
			b.WriteString(" tool:" + c.Name)
		}
		b.WriteString("\n")
		return b.String()
	}
	tag := "[tool] "
	if m.Result.IsError {
		tag = "[tool_err] "
	}
	return tag + lossyText(m.Result.Parts) + "\n"
}
