package agent

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"buzzbox/agent/llm"
	"buzzbox/internal/proc"
	"buzzbox/internal/statedir"
	"buzzbox/internal/workspace"
)

// Environment variable names, spelled as upstream.
const (
	envSystemPrompt      = "BUZZ_AGENT_SYSTEM_PROMPT"
	envSystemPromptFile  = "BUZZ_AGENT_SYSTEM_PROMPT_FILE"
	envMaxRounds         = "BUZZ_AGENT_MAX_ROUNDS"
	envMaxOutputTokens   = "BUZZ_AGENT_MAX_OUTPUT_TOKENS"
	envMaxContextTokens  = "BUZZ_AGENT_MAX_CONTEXT_TOKENS"
	envMaxHandoffs       = "BUZZ_AGENT_MAX_HANDOFFS"
	envLLMTimeout        = "BUZZ_AGENT_LLM_TIMEOUT_SECS"
	envLLMMaxCall        = "BUZZ_AGENT_LLM_MAX_CALL_SECS"
	envToolTimeout       = "BUZZ_AGENT_TOOL_TIMEOUT_SECS"
	envMCPInitTimeout    = "BUZZ_AGENT_MCP_INIT_TIMEOUT_SECS"
	envRestartMax        = "BUZZ_AGENT_MCP_RESTART_MAX_ATTEMPTS"
	envRestartBase       = "BUZZ_AGENT_MCP_RESTART_BASE_MS"
	envRestartCap        = "BUZZ_AGENT_MCP_RESTART_MAX_MS"
	envMaxParallelTools  = "BUZZ_AGENT_MAX_PARALLEL_TOOLS"
	envMaxSessions       = "BUZZ_AGENT_MAX_SESSIONS"
	envMaxLineBytes      = "BUZZ_AGENT_MAX_LINE_BYTES"
	envMaxHistoryBytes   = "BUZZ_AGENT_MAX_HISTORY_BYTES"
	envMaxToolResultText = "BUZZ_AGENT_MAX_TOOL_RESULT_TEXT_BYTES"
	envHookTimeout       = "BUZZ_AGENT_HOOK_TIMEOUT_MS"
	envStopMaxRejections = "BUZZ_AGENT_STOP_MAX_REJECTIONS"
	envRequireReply      = "BUZZ_AGENT_REQUIRE_REPLY"
	envHookServers       = "MCP_HOOK_SERVERS"
	envNoHints           = "BUZZ_AGENT_NO_HINTS"
	envThinkingEffort    = "BUZZ_AGENT_THINKING_EFFORT"
	envPromptCaching     = "BUZZ_AGENT_PROMPT_CACHING"
	envStream            = "BUZZ_AGENT_STREAM"
	envLogLevel          = "BUZZ_AGENT_LOG_LEVEL"
	envLogFormat         = "BUZZ_AGENT_LOG_FORMAT"
)

// defaultSystemPrompt is used when neither the client nor the environment
// gives one.
const defaultSystemPrompt = "You are buzz-agent. Act only through the provided tools: your tool calls are your only output, and plain text is never shown to anyone."

// Options is the agent's configuration, read once from the environment.
type Options struct {
	Provider   llm.Provider
	Model      string
	APIKey     secret
	BaseURL    string
	APIVersion string // Anthropic only
	OpenAIAPI  string // openai only: auto, chat, responses

	SystemPrompt      string
	MaxRounds         int // 0 = unlimited
	MaxOutputTokens   int
	MaxContextTokens  int
	MaxHandoffs       int
	LLMTimeout        time.Duration // silence (no progress) allowed in one LLM attempt
	LLMMaxCall        time.Duration // wall-clock cap of one LLM call, retries included
	ToolTimeout       time.Duration
	MCPInitTimeout    time.Duration
	RestartMax        int
	RestartBase       time.Duration
	RestartCap        time.Duration
	MaxParallelTools  int
	MaxSessions       int // 0 = unlimited
	MaxLineBytes      int
	MaxHistoryBytes   int
	MaxToolResultText int
	HookTimeout       time.Duration
	StopMaxRejections int
	RequireReply      bool
	HookServers       []string // nil = hooks off
	NoHints           bool
	Effort            string
	PromptCaching     bool
	Stream            bool

	// ApprovalRules are the shell commands that need a person's approval
	// (BUZZ_AGENT_APPROVAL_RULES); nil none.
	ApprovalRules []approvalRule

	// StateDir is where sessions are kept for session/load (one file each);
	// empty keeps them in memory only.
	StateDir string

	// RetryBase shortens the LLM retry backoff (tests only; zero = default).
	RetryBase time.Duration
}

// secret is a credential: it redacts itself in logs and formatted output.
type secret string

// LogValue keeps the value out of slog output.
func (secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// String keeps the value out of fmt output.
func (secret) String() string { return "[redacted]" }

// GoString keeps the value out of %#v output.
func (secret) GoString() string { return "[redacted]" }

// optionError is a configuration error; its text names the variable.
type optionError struct{ msg string }

func (e *optionError) Error() string { return "config: " + e.msg }

func cfgErr(format string, args ...any) error { return &optionError{fmt.Sprintf(format, args...)} }

type envReader struct {
	env proc.Env
	err error
}

func (r *envReader) str(key string) string { return strings.TrimSpace(r.env.Getenv(key)) }

// int reads key as an integer in [lo, hi], def when unset or blank.
func (r *envReader) int(key string, def, lo, hi int) int {
	raw := r.str(key)
	if raw == "" || r.err != nil {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		r.err = cfgErr("%s=%q is not an integer", key, raw)
		return def
	}
	if n < lo || n > hi {
		r.err = cfgErr("%s=%d out of range [%d, %d]", key, n, lo, hi)
		return def
	}
	return n
}

func (r *envReader) toggle(key string, def bool) bool {
	d := 0
	if def {
		d = 1
	}
	return r.int(key, d, math.MinInt32, math.MaxInt32) != 0
}

// parseOptions reads and checks the environment.
func parseOptions(env proc.Env) (Options, error) {
	r := &envReader{env: env}
	var o Options
	if r.str(workspace.EnvAgentProvider) == "" {
		return o, cfgErr("%s is required — set it to anthropic, openai, openrouter, databricks or databricks_v2", workspace.EnvAgentProvider)
	}
	p, ok := parseProvider(r.str(workspace.EnvAgentProvider))
	if !ok {
		return o, cfgErr("%s=%s not supported", workspace.EnvAgentProvider, env.Getenv(workspace.EnvAgentProvider))
	}
	o.Provider = p
	need := func(key string) string {
		v := r.str(key)
		if v == "" && r.err == nil {
			r.err = cfgErr("%s required", key)
		}
		return v
	}
	orDefault := func(key, def string) string {
		if v := r.str(key); v != "" {
			return v
		}
		return def
	}
	switch o.Provider {
	case llm.Anthropic:
		o.APIKey = secret(need("ANTHROPIC_API_KEY"))
		o.Model = r.str("ANTHROPIC_MODEL")
		o.BaseURL = orDefault("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
		o.APIVersion = orDefault("ANTHROPIC_API_VERSION", "2023-06-01")
	case llm.OpenAI:
		o.APIKey = secret(need("OPENAI_COMPAT_API_KEY"))
		o.Model = r.str("OPENAI_COMPAT_MODEL")
		o.BaseURL = orDefault("OPENAI_COMPAT_BASE_URL", "https://api.openai.com/v1")
		switch api := strings.ToLower(orDefault("OPENAI_COMPAT_API", "auto")); api {
		case "auto":
			o.OpenAIAPI = llm.APIAuto
		case "chat", "chat-completions", "chat_completions":
			o.OpenAIAPI = llm.APIChat
		case "responses":
			o.OpenAIAPI = llm.APIResponses
		default:
			r.err = cfgErr("OPENAI_COMPAT_API=%s not supported (auto, chat or responses)", api)
		}
	case llm.OpenRouter:
		o.APIKey = secret(need("OPENROUTER_API_KEY"))
		o.Model = r.str("OPENROUTER_MODEL")
		o.BaseURL = orDefault("OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1")
	case llm.Databricks, llm.DatabricksV2:
		o.BaseURL = need("DATABRICKS_HOST")
		o.Model = need("DATABRICKS_MODEL")
		o.APIKey = secret(r.str("DATABRICKS_TOKEN"))
		if o.APIKey == "" && r.err == nil {
			r.err = cfgErr("DATABRICKS_TOKEN required: this build has no browser OAuth login; create a personal access token and set DATABRICKS_TOKEN")
		}
	}
	if m := r.str(workspace.EnvAgentModel); m != "" {
		o.Model = m
	}
	if o.Model == "" && r.err == nil {
		r.err = cfgErr("no model configured: set %s or the provider's *_MODEL variable", workspace.EnvAgentModel)
	}
	if r.err != nil {
		return o, r.err
	}

	inline, file := env.Getenv(envSystemPrompt), r.str(envSystemPromptFile)
	switch {
	case inline != "" && file != "":
		return o, cfgErr("%s and %s are mutually exclusive", envSystemPrompt, envSystemPromptFile)
	case file != "":
		if !isAbs(file) && env.Dir != "" {
			file = env.Dir + "/" + file
		}
		b, err := readCapped(file, maxSystemPromptBytes)
		if err != nil {
			return o, cfgErr("%s: %v", envSystemPromptFile, err)
		}
		o.SystemPrompt = string(b)
	case inline != "":
		o.SystemPrompt = inline
	default:
		o.SystemPrompt = defaultSystemPrompt
	}

	const maxInt = math.MaxInt32
	o.MaxRounds = r.int(envMaxRounds, 0, 0, maxInt)
	o.MaxOutputTokens = r.int(envMaxOutputTokens, 32768, 1, maxInt)
	o.MaxContextTokens = r.int(envMaxContextTokens, 200000, 1, maxInt)
	if r.err == nil && o.MaxContextTokens <= o.MaxOutputTokens {
		r.err = cfgErr("%s=%d must be greater than %s=%d", envMaxContextTokens, o.MaxContextTokens, envMaxOutputTokens, o.MaxOutputTokens)
	}
	o.MaxHandoffs = r.int(envMaxHandoffs, 10, 0, maxInt)
	o.LLMTimeout = time.Duration(r.int(envLLMTimeout, 240, 1, 86400)) * time.Second
	o.LLMMaxCall = time.Duration(r.int(envLLMMaxCall, 600, 1, 86400)) * time.Second
	o.ToolTimeout = time.Duration(r.int(envToolTimeout, 660, 1, 86400)) * time.Second
	o.MCPInitTimeout = time.Duration(r.int(envMCPInitTimeout, 30, 1, 86400)) * time.Second
	o.RestartMax = r.int(envRestartMax, 3, 1, 1000)
	base := r.int(envRestartBase, 500, 1, 86_400_000)
	o.RestartBase = time.Duration(base) * time.Millisecond
	o.RestartCap = time.Duration(r.int(envRestartCap, 30000, base, 86_400_000)) * time.Millisecond
	o.MaxParallelTools = r.int(envMaxParallelTools, 8, 1, 1024)
	o.MaxSessions = r.int(envMaxSessions, 0, 0, maxInt)
	o.MaxLineBytes = r.int(envMaxLineBytes, 4<<20, 1024, 1<<30)
	o.MaxHistoryBytes = r.int(envMaxHistoryBytes, 16<<20, max(4096, maxPromptBytes), 1<<31-1)
	o.MaxToolResultText = r.int(envMaxToolResultText, 51200, 1024, 8<<20)
	o.HookTimeout = time.Duration(r.int(envHookTimeout, 2500, 1, 3_600_000)) * time.Millisecond
	o.StopMaxRejections = r.int(envStopMaxRejections, 3, 0, 1000)
	o.RequireReply = r.toggle(envRequireReply, false)
	o.NoHints = r.toggle(envNoHints, false)
	o.PromptCaching = r.toggle(envPromptCaching, true)
	o.Stream = r.toggle(envStream, true)
	if r.err != nil {
		return o, r.err
	}
	o.StateDir = r.str(workspace.EnvAgentStateDir)
	switch {
	case o.StateDir == "":
		if root, err := statedir.Root(env.Getenv); err == nil {
			o.StateDir = filepath.Join(root, "agent")
		}
	case !filepath.IsAbs(o.StateDir):
		return o, cfgErr("%s=%s must be an absolute path", workspace.EnvAgentStateDir, o.StateDir)
	}
	if file := r.str(envApprovalRules); file != "" {
		rules, err := loadApprovalRules(file)
		if err != nil {
			return o, err
		}
		o.ApprovalRules = rules
	}
	if raw, ok := env.LookupEnv(envHookServers); ok {
		o.HookServers = parseHookServers(raw)
	}
	if e := strings.ToLower(r.str(envThinkingEffort)); e != "" {
		switch e {
		case "none", "minimal":
			if o.Provider == llm.Anthropic {
				return o, cfgErr("%s=%s is not supported by anthropic (use low, medium, high, xhigh or max)", envThinkingEffort, e)
			}
		case "low", "medium", "high", "xhigh", "max":
		default:
			return o, cfgErr("%s=%s not supported (none, minimal, low, medium, high, xhigh, max)", envThinkingEffort, e)
		}
		o.Effort = e
	}
	return o, nil
}

// parseHookServers reads MCP_HOOK_SERVERS: "*" alone allows every server;
// otherwise a comma list, trimmed, empties dropped. A "*" mixed with names
// is a literal that matches nothing.
func parseHookServers(raw string) []string {
	var out []string
	for _, f := range strings.Split(raw, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	if len(out) > 1 {
		for i, f := range out {
			if f == "*" {
				out[i] = "\x00*" // a literal name no server can have
			}
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

func isAbs(p string) bool { return strings.HasPrefix(p, "/") }

// readCapped reads path, failing when it holds more than limit bytes.
func readCapped(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}
