package harness

import "sync"

// sync0 builds a value on first use, so package init does no work.
func sync0[T any](f func() T) func() T { return sync.OnceValue(f) }
