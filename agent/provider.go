package agent

import (
	"errors"
	"strings"

	"buzzbox/agent/llm"
	"buzzbox/internal/workspace"
)

// parseProvider reads a BUZZ_AGENT_PROVIDER value, case and surrounding
// space ignored.
func parseProvider(v string) (llm.Provider, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "anthropic":
		return llm.Anthropic, true
	case "openai", "openai-compat":
		return llm.OpenAI, true
	case "openrouter":
		return llm.OpenRouter, true
	case "databricks":
		return llm.Databricks, true
	case "databricks_v2", "databricks-v2":
		return llm.DatabricksV2, true
	}
	return "", false
}

// providerNeeds lists the variables parseOptions refuses to start without
// for provider p, and whether BUZZ_AGENT_MODEL stands in for the model
// variable among them (Databricks needs its own DATABRICKS_MODEL).
func providerNeeds(p llm.Provider) (vars []string, modelOverride bool) {
	key, model, base := providerEnv(p)
	if p == llm.Databricks || p == llm.DatabricksV2 {
		return []string{base, model, key}, false
	}
	return []string{key, model}, true
}

// errNoProvider is CheckProvider's answer when BUZZ_AGENT_PROVIDER is unset.
var errNoProvider = errors.New("no LLM provider configured: set " + workspace.EnvAgentProvider + " and that provider's key and model, for example\n" +
	"  BUZZ_AGENT_PROVIDER=anthropic  ANTHROPIC_API_KEY=…  ANTHROPIC_MODEL=…\n" +
	"  BUZZ_AGENT_PROVIDER=openai     OPENAI_COMPAT_API_KEY=…  OPENAI_COMPAT_MODEL=…  [OPENAI_COMPAT_BASE_URL=…]\n" +
	"  BUZZ_AGENT_PROVIDER=openrouter OPENROUTER_API_KEY=…  OPENROUTER_MODEL=…\n" +
	"  BUZZ_AGENT_PROVIDER=databricks DATABRICKS_HOST=…  DATABRICKS_MODEL=…  DATABRICKS_TOKEN=…")

// CheckProvider reports whether getenv configures a model provider
// buzz-agent can start with: BUZZ_AGENT_PROVIDER names a supported one and
// its credential, endpoint and model variables are set, as buzz-agent
// itself requires them. The error names every missing variable, so a
// launcher (`buzzbox up`) can refuse before starting anything. It checks
// presence only: whether the key is accepted is the provider's to say.
func CheckProvider(getenv func(string) string) error {
	raw := strings.TrimSpace(getenv(workspace.EnvAgentProvider))
	if raw == "" {
		return errNoProvider
	}
	p, ok := parseProvider(raw)
	if !ok {
		return errors.New(workspace.EnvAgentProvider + "=" + strings.ToLower(raw) + " is not supported: use anthropic, openai, openrouter, databricks or databricks_v2")
	}
	vars, modelOverride := providerNeeds(p)
	_, model, _ := providerEnv(p)
	var missing []string
	for _, v := range vars {
		if strings.TrimSpace(getenv(v)) != "" {
			continue
		}
		if v == model && modelOverride && strings.TrimSpace(getenv(workspace.EnvAgentModel)) != "" {
			continue
		}
		missing = append(missing, v)
	}
	if len(missing) > 0 {
		return errors.New(workspace.EnvAgentProvider + "=" + strings.ToLower(raw) + " needs " + strings.Join(missing, " and ") + " to be set")
	}
	return nil
}
