package up

import "time"

// Set-up of the general channel on the embedded relay.
const (
	// connectTimeout bounds the set-up's dial and NIP-42 login, as the
	// harness bounds its own: the relay is in this process, so
	// only a wedged one meets it.
	connectTimeout = 30 * time.Second
	// requestTimeout bounds each query or publish of the set-up.
	requestTimeout = 10 * time.Second
)
