package agent

import (
	"strings"
	"testing"

	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
)

// TestCheckProviderAgreesWithOptions: CheckProvider, which `buzzbox up`
// asks before starting anything, passes exactly the provider settings
// buzz-agent starts with, for every provider spelling and every subset of
// its variables (BUZZ_AGENT_MODEL with and without). A launcher's own
// copy of the table once let databricks through without DATABRICKS_TOKEN,
// which buzz-agent then refused on every turn.
func TestCheckProviderAgreesWithOptions(t *testing.T) {
	for _, spelling := range []string{"anthropic", "openai", "OpenAI-compat", "openrouter", "databricks", "databricks_v2", "databricks-v2", " anthropic "} {
		p, ok := parseProvider(spelling)
		if !ok {
			t.Fatalf("parseProvider(%q) refused", spelling)
		}
		vars, _ := providerNeeds(p)
		all := append(append([]string(nil), vars...), workspace.EnvAgentModel)
		for mask := 0; mask < 1<<len(all); mask++ {
			environ := []string{workspace.EnvAgentProvider + "=" + spelling}
			for i, v := range all {
				if mask&(1<<i) != 0 {
					environ = append(environ, v+"=x")
				}
			}
			env := proc.Env{Environ: environ}
			_, optErr := parseOptions(env)
			checkErr := CheckProvider(env.Getenv)
			if (optErr == nil) != (checkErr == nil) {
				t.Errorf("%q: parseOptions = %v but CheckProvider = %v; want both to pass or both to fail", environ, optErr, checkErr)
			}
		}
	}
}

// TestCheckProviderNamesWhatIsMissing: the refusal names the provider
// variable, every missing one, or the unsupported value.
func TestCheckProviderNamesWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want []string
	}{
		{nil, []string{"BUZZ_AGENT_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_COMPAT_MODEL", "DATABRICKS_TOKEN"}},
		{[]string{"BUZZ_AGENT_PROVIDER=anthropic"}, []string{"needs ANTHROPIC_API_KEY and ANTHROPIC_MODEL to be set"}},
		{[]string{"BUZZ_AGENT_PROVIDER=anthropic", "BUZZ_AGENT_MODEL=m"}, []string{"needs ANTHROPIC_API_KEY to be set"}},
		{[]string{"BUZZ_AGENT_PROVIDER=databricks", "DATABRICKS_HOST=h", "DATABRICKS_MODEL=m"}, []string{"needs DATABRICKS_TOKEN to be set"}},
		{[]string{"BUZZ_AGENT_PROVIDER=Bogus"}, []string{"BUZZ_AGENT_PROVIDER=bogus is not supported"}},
	} {
		err := CheckProvider(proc.Env{Environ: tc.env}.Getenv)
		if err == nil {
			t.Errorf("CheckProvider(%q) = nil; want an error", tc.env)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("CheckProvider(%q) = %q; want it to say %q", tc.env, err, w)
			}
		}
	}
	if err := CheckProvider(proc.Env{Environ: []string{"BUZZ_AGENT_PROVIDER=openrouter", "OPENROUTER_API_KEY=k", "OPENROUTER_MODEL=m"}}.Getenv); err != nil {
		t.Errorf("CheckProvider(openrouter, key, model) = %v; want nil", err)
	}
}
