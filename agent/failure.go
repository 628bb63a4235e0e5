package agent

import (
	"net/url"

	"buzzbox/agent/llm"
	"buzzbox/internal/acp"
)

// providerEnv names the variables that set provider p's credential, model
// and endpoint, as options.go reads them.
func providerEnv(p llm.Provider) (key, model, base string) {
	switch p {
	case llm.Anthropic:
		return "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "ANTHROPIC_BASE_URL"
	case llm.OpenAI:
		return "OPENAI_COMPAT_API_KEY", "OPENAI_COMPAT_MODEL", "OPENAI_COMPAT_BASE_URL"
	case llm.OpenRouter:
		return "OPENROUTER_API_KEY", "OPENROUTER_MODEL", "OPENROUTER_BASE_URL"
	case llm.Databricks, llm.DatabricksV2:
		return "DATABRICKS_TOKEN", "DATABRICKS_MODEL", "DATABRICKS_HOST"
	}
	return "", "", ""
}

// failure describes a provider error as facts for the ACP error's data
// (acp.Failure): no provider text, which may quote the credential.
func (a *Agent) failure(model string, le *llm.Error) acp.Failure {
	f := acp.Failure{Status: le.Status, Retryable: le.Retryable(), Provider: string(a.opts.Provider), Model: model,
		BaseURL: publicURL(a.opts.BaseURL)}
	f.KeyEnv, f.ModelEnv, f.BaseURLEnv = providerEnv(a.opts.Provider)
	switch {
	case le.Kind == llm.KindAuth:
		f.Kind = acp.FailureAuth
	case le.Kind == llm.KindNotFound:
		f.Kind = acp.FailureModelNotFound
	case le.Kind == llm.KindUnreachable:
		f.Kind = acp.FailureUnreachable
	case le.Kind == llm.KindContextWindow:
		f.Kind = acp.FailureContextWindow
	case le.Status == 429:
		f.Kind = acp.FailureRateLimited
	case le.Status >= 500 || le.Status == 0 && le.Retryable():
		f.Kind = acp.FailureProvider
	default:
		f.Kind = acp.FailureOther
	}
	return f
}

// publicURL is raw without user info, query and fragment, which may hold
// credentials; "" when raw does not parse.
func publicURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
