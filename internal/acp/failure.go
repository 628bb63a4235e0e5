package acp

// Failure is the data member of the JSON-RPC error buzz-agent answers a
// session/prompt with when the model provider failed. It carries the
// cause as facts, never provider text, so that a client can tell a person
// what went wrong and what to change without quoting a body that may echo
// a credential. Other agents send no such data; clients fall back to the
// error code and message.
type Failure struct {
	// Kind is one of the Failure* constants.
	Kind string `json:"kind"`
	// Status is the provider's HTTP status; 0 when no answer came.
	Status int `json:"status,omitempty"`
	// Retryable says whether the same request may succeed later.
	Retryable bool `json:"retryable"`
	// Provider is BUZZ_AGENT_PROVIDER's value; Model the model asked for.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// BaseURL is the endpoint reached for, without user info, query or
	// fragment; empty when it is the provider's default.
	BaseURL string `json:"baseUrl,omitempty"`
	// KeyEnv, ModelEnv and BaseURLEnv name the environment variables that
	// set the credential, the model and the endpoint.
	KeyEnv     string `json:"keyEnv,omitempty"`
	ModelEnv   string `json:"modelEnv,omitempty"`
	BaseURLEnv string `json:"baseUrlEnv,omitempty"`
}

// Failure kinds.
const (
	FailureAuth          = "auth"            // 401/403: the credential was refused
	FailureModelNotFound = "model_not_found" // 404 or the provider's model_not_found
	FailureUnreachable   = "unreachable"     // no connection to the endpoint
	FailureRateLimited   = "rate_limited"    // 429
	FailureProvider      = "provider_error"  // 5xx or another provider-side failure
	FailureContextWindow = "context_window"  // the request does not fit the model
	FailureOther         = "other"           // any other rejected request
)
