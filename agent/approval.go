package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"strings"

	"buzzbox/agent/llm"
	"buzzbox/internal/acp"
)

// Approval rules put buzz-agent's shell on a leash: a file of command
// patterns (BUZZ_AGENT_APPROVAL_RULES names it), one a line, such as
// `git push` or `rm -rf`. When the model asks the shell tool to run a
// command one of them matches, buzz-agent sends session/request_permission
// to its client and runs the command only if a person allows it. It is a
// leash against a model's mistakes, not a sandbox against a hostile one:
// a command spelled to dodge the words is not caught.

// envApprovalRules names the rule file.
const envApprovalRules = "BUZZ_AGENT_APPROVAL_RULES"

// Bounds of a rule file.
const (
	maxApprovalRules     = 200      // patterns; a longer list is a mistake, not a policy
	maxApprovalRuleBytes = 64 << 10 // the file
)

// shellTool is the bare name of the MCP tool that runs shell commands
// (buzz-dev-mcp's shell, or any server's tool of that name).
const shellTool = "shell"

// The options buzz-agent offers when it asks (ACP PermissionOption ids).
const (
	optionAllowOnce   = "allow-once"
	optionAllowAlways = "allow-always"
	optionReject      = "reject"
)

// approvalRule is one pattern: its text and its words.
type approvalRule struct {
	text  string
	words []string
}

// loadApprovalRules reads a rule file: one pattern a line; blank lines and
// lines starting with # are skipped. A word of a pattern may hold the
// wildcards of path.Match (`*`, `?`, `[…]`).
func loadApprovalRules(file string) ([]approvalRule, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, cfgErr("%s=%s: %v", envApprovalRules, file, err)
	}
	defer f.Close()
	b := make([]byte, maxApprovalRuleBytes+1)
	n, _ := f.Read(b)
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
	}
	if n > maxApprovalRuleBytes {
		return nil, cfgErr("%s=%s is over %d bytes", envApprovalRules, file, maxApprovalRuleBytes)
	}
	var rules []approvalRule
	for i, line := range strings.Split(string(b[:n]), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words := commandWords(line)
		for _, w := range words {
			if _, err := path.Match(w, ""); err != nil {
				return nil, cfgErr("%s=%s line %d: bad pattern %q: %v", envApprovalRules, file, i+1, w, err)
			}
		}
		if len(words) == 0 {
			continue
		}
		if len(rules) == maxApprovalRules {
			return nil, cfgErr("%s=%s has more than %d rules", envApprovalRules, file, maxApprovalRules)
		}
		rules = append(rules, approvalRule{text: line, words: words})
	}
	return rules, nil
}

// commandWords splits a command line into words: shell operators and
// quotes separate or vanish, so `cd x && git "push"` is cd x git push.
func commandWords(s string) []string {
	return strings.FieldsFunc(strings.NewReplacer(`"`, "", `'`, "", `\`, "", "`", " ", "$(", " ").Replace(s), func(r rune) bool {
		switch r {
		case ' ', '\t', '\n', '\r', ';', '&', '|', '(', ')', '{', '}', '<', '>':
			return true
		}
		return false
	})
}

// matchRule is the first rule whose words occur, in order and next to
// each other, among the command's words; "" when none does.
func matchRule(rules []approvalRule, command string) string {
	words := commandWords(command)
	for _, r := range rules {
		for i := 0; i+len(r.words) <= len(words); i++ {
			ok := true
			for j, w := range r.words {
				if m, _ := path.Match(w, words[i+j]); !m {
					ok = false
					break
				}
			}
			if ok {
				return r.text
			}
		}
	}
	return ""
}

// shellCommand is the command a shell tool call would run, "" when c is
// no shell call.
func (s *Session) shellCommand(c llm.ToolCall) string {
	if s.reg.Bare(c.Name) != shellTool {
		return ""
	}
	var args struct {
		Command string `json:"command"`
	}
	json.Unmarshal(c.Args, &args) // a call without a command string runs nothing to check
	return args.Command
}

// approve asks the client whether c, which rule matched, may run. It
// reports whether it may and, when not, why. An allow for the session
// lets later commands of the same rule run without asking.
func (s *Session) approve(ctx context.Context, c llm.ToolCall, command, rule string) (bool, string) {
	s.mu.Lock()
	always := s.allowed[rule]
	s.mu.Unlock()
	if always {
		return true, ""
	}
	tc, _ := json.Marshal(map[string]any{"toolCallId": c.ID, "title": c.Name, "kind": "execute", "status": acp.StatusPending,
		"rawInput": json.RawMessage(c.Args)})
	req := acp.PermissionRequest{SessionID: s.id, ToolCall: tc, Meta: &acp.PermissionMeta{Rule: rule},
		Options: []acp.PermissionOption{{OptionID: optionAllowOnce, Name: "Allow once", Kind: "allow_once"},
			{OptionID: optionAllowAlways, Name: "Allow for this session", Kind: "allow_always"},
			{OptionID: optionReject, Name: "Reject", Kind: "reject_once"}}}
	var res acp.PermissionResponse
	if err := s.agent.conn.Call(ctx, acp.MethodPermission, req, &res); err != nil {
		return false, fmt.Sprintf("the client could not be asked (%v)", err)
	}
	switch {
	case res.Outcome.Outcome != "selected":
		return false, "the request was cancelled"
	case res.Outcome.OptionID == optionAllowOnce:
		return true, ""
	case res.Outcome.OptionID == optionAllowAlways:
		s.mu.Lock()
		if s.allowed == nil {
			s.allowed = map[string]bool{}
		}
		s.allowed[rule] = true
		s.mu.Unlock()
		return true, ""
	}
	return false, "it was rejected"
}

// rejectedText is the tool result of a command nobody allowed.
func rejectedText(command, rule, why string) string {
	return fmt.Sprintf("Not run: the command %q matches the approval rule %q, so a person was asked, and %s. "+
		"Do not try to run it another way; say in the thread what you wanted to do and why, and wait for the person.", command, rule, why)
}
