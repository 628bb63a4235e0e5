package leakcheck

import "time"

const (
	// settleTimeout bounds how long a check waits for goroutines already
	// on their way out (a connection's reader that has seen EOF, a
	// worker draining its last item) before it calls them leaked. On a
	// loaded two-core machine a closed server's goroutines take up to a
	// few seconds to be scheduled and return; one still running after
	// ten is waiting on something nobody will do.
	settleTimeout = 10 * time.Second

	// firstRetry and maxRetry are the waits between looks: short at
	// first, as most stragglers are gone within milliseconds, doubling
	// up to a tenth of a second so a long settle costs few stack dumps.
	firstRetry = 5 * time.Millisecond
	maxRetry   = 100 * time.Millisecond

	// maxStackBytes caps one dump of every goroutine's stack. A test
	// process rarely holds more than a few hundred goroutines (a few KiB
	// each); a dump that fills the cap is retried with twice the room up
	// to this, and what is past it is not parsed.
	maxStackBytes = 64 << 20
)
