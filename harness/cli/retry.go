package cli

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// attemptErr is how one attempt failed.
type attemptErr struct {
	err       *Error        // reported when no attempt is left
	retry     bool          // another attempt may succeed
	ambiguous bool          // a write may have reached the relay
	after     time.Duration // the relay asked us to wait this long (429)
}

func fatal(e *Error) *attemptErr { return &attemptErr{err: e} }

// retryMode says how a failed attempt may be repeated.
type retryMode int

const (
	retryRead       retryMode = iota // any retryable failure is retried
	retryWrite                       // ambiguous failures end in delivery_unknown
	retryModeration                  // like write, but never repeated after an ambiguous outcome
)

// retry runs fn up to maxAttempts times with the spec's jitter. Each
// attempt must build its own request (a fresh NIP-98 token).
func retry(ctx context.Context, write bool, fn func(context.Context) *attemptErr) error {
	mode := retryRead
	if write {
		mode = retryWrite
	}
	return retryWith(ctx, mode, fn)
}

func retryWith(ctx context.Context, mode retryMode, fn func(context.Context) *attemptErr) error {
	var last *attemptErr
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if attempt > 1 {
			d := last.after
			if d == 0 {
				ceiling := jitterSecond
				if attempt == 3 {
					ceiling = jitterThird
				}
				d = rand.N(ceiling)
			}
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return &Error{Category: catNetwork, Message: "network error: " + ctx.Err().Error(), Retryable: true}
			case <-t.C:
			}
		}
		last = fn(ctx)
		if last == nil {
			return nil
		}
		if !last.retry || (mode == retryModeration && last.ambiguous) {
			break
		}
	}
	if mode != retryRead && last.ambiguous {
		return &Error{Category: catDeliveryUnknown,
			Message:   "delivery unknown: the relay may or may not have stored the event (" + last.err.Message + "); check with a read before sending again",
			Retryable: false}
	}
	return last.err
}

// classifyHTTPErr sorts a transport failure: a failed connect is safe to
// repeat; anything after the request left is ambiguous for a write.
func classifyHTTPErr(err error) *attemptErr {
	e := &Error{Category: catNetwork, Message: "network error: " + err.Error(), Retryable: true}
	var op *net.OpError
	var dns *net.DNSError
	if (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns) {
		return &attemptErr{err: e, retry: true}
	}
	return &attemptErr{err: e, retry: true, ambiguous: true}
}

// retryHint finds "retry in <N>s" in a 429 message, capped at maxRetryAfter.
func retryHint(text string) time.Duration {
	m := retryInRE().FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	d := time.Duration(n) * time.Second
	return min(d, maxRetryAfter)
}

var retryInRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`retry in (\d{1,6})\s?s`)
})
