package harness

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
)

// ACP error codes buzz-agent answers a failed prompt with (agent/server.go).
const (
	codeLLMAuth       = -32001
	codeModelNotFound = -32002
)

// failure is why a turn failed, worded for the person waiting in the
// thread.
type failure struct {
	// cause is a sentence fragment naming what went wrong and what to
	// change ("the model provider refused the API key (401): check …").
	cause string
	// retryable says whether another attempt later may succeed; a failure
	// that is not is reported and dropped at once.
	retryable bool
}

// classify words an agent's JSON-RPC error. buzz-agent sends the cause as
// acp.Failure data; any other agent is judged by its code and message.
func classify(err error) failure {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		return failure{cause: "the agent failed: " + clip(errText(err)), retryable: true}
	}
	if f, ok := failureData(rpc.Data); ok {
		return wordFailure(f)
	}
	msg := strings.ToLower(rpc.Message)
	switch {
	case rpc.Code == codeLLMAuth:
		return failure{cause: "the model provider refused the agent's credentials: check the agent's API key"}
	case rpc.Code == codeModelNotFound:
		return failure{cause: "the model provider does not know the configured model: check the agent's model setting"}
	case strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host"):
		return failure{cause: "the agent could not reach its model provider: check the provider's address and that it is running", retryable: true}
	}
	return failure{cause: "the agent failed: " + clip(rpc.Message), retryable: true}
}

// failureData decodes the acp.Failure an error's data carries.
func failureData(data any) (acp.Failure, bool) {
	var f acp.Failure
	if data == nil {
		return f, false
	}
	b, err := json.Marshal(data)
	if err != nil || json.Unmarshal(b, &f) != nil || f.Kind == "" {
		return acp.Failure{}, false
	}
	return f, true
}

// wordFailure turns buzz-agent's facts into the notice's words.
func wordFailure(f acp.Failure) failure {
	status := ""
	if f.Status != 0 {
		status = " (" + strconv.Itoa(f.Status) + ")"
	}
	model := "the model"
	if f.Model != "" {
		model = "the model " + strconv.Quote(clipRunes(f.Model, maxNoticeField))
	}
	where := "the model provider"
	if f.BaseURL != "" {
		where = "the model provider at " + clipRunes(f.BaseURL, maxNoticeField)
	}
	orVar := func(v, fallback string) string {
		if v == "" {
			return fallback
		}
		return v
	}
	switch f.Kind {
	case acp.FailureAuth:
		return failure{cause: "the model provider refused the API key" + status + ": check " + orVar(f.KeyEnv, "the agent's API key")}
	case acp.FailureModelNotFound:
		hint := orVar(f.ModelEnv, "the agent's model setting")
		if f.ModelEnv != "" {
			hint += " (or BUZZ_AGENT_MODEL)"
		}
		return failure{cause: where + " does not know " + model + status + ": check " + hint}
	case acp.FailureUnreachable:
		return failure{cause: where + " could not be reached (no connection): check " +
			orVar(f.BaseURLEnv, "the provider's address") + " and that the server is running", retryable: true}
	case acp.FailureRateLimited:
		return failure{cause: "the model provider is rate-limiting the agent" + status, retryable: true}
	case acp.FailureContextWindow:
		return failure{cause: "the conversation no longer fits " + model + "'s context window: start a new thread"}
	case acp.FailureProvider:
		return failure{cause: where + " failed to answer" + status, retryable: true}
	}
	switch {
	case f.Status == 402:
		return failure{cause: "the model provider asks for payment (402): check the account's credits"}
	case f.Status == 0:
		// No status: the answer came but could not be read. A proxy or
		// a passing fault may be to blame, so it is retried.
		return failure{cause: where + " sent an answer the agent could not read: check that " +
			orVar(f.BaseURLEnv, "the endpoint") + " points at this provider's API", retryable: true}
	}
	return failure{cause: where + " rejected the request" + status + ": check the agent's provider settings (" +
		orVar(f.ModelEnv, "model") + ", " + orVar(f.BaseURLEnv, "endpoint") + ")", retryable: f.Retryable}
}

// clip shortens an error message for a notice.
func clip(s string) string { return clipRunes(strings.TrimSpace(s), maxNoticeCause) }

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// secretEnvSuffixes mark environment variables whose values never appear
// in a notice: the agent's provider keys and tokens among them.
var secretEnvSuffixes = [...]string{"_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_NSEC"}

// redact removes from text the value of every secret-looking variable of
// environ, so that an error message that quotes a credential does not
// carry it into the thread.
func redact(text string, environ []string) string {
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || len(v) < minSecretLen {
			continue
		}
		up := strings.ToUpper(k)
		for _, suf := range secretEnvSuffixes {
			if strings.HasSuffix(up, suf) {
				text = strings.ReplaceAll(text, v, "[redacted]")
				break
			}
		}
	}
	return text
}

// sessionGone reports whether an agent's error says the session itself
// is gone (Claude Code's "The Claude Agent session has ended. Please start
// a new session.", an unknown or missing session): prompting it again
// cannot work, so the session must be replaced, not kept.
func sessionGone(err error) bool {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		return false
	}
	msg := strings.ToLower(rpc.Message)
	for _, s := range []string{"session has ended", "start a new session", "session not found", "unknown session", "no such session"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
