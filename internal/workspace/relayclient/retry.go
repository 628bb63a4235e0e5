package relayclient

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"
)

// attempt is how one attempt of an operation failed.
type attempt struct {
	err       *Error        // reported when no attempt is left
	retry     bool          // another attempt may succeed
	ambiguous bool          // a write may have reached the relay
	after     time.Duration // the relay asked us to wait this long (429)
}

func fatal(e *Error) *attempt { return &attempt{err: e} }

// retryMode says how a failed attempt may be repeated.
type retryMode int

const (
	retryRead       retryMode = iota // any retryable failure is retried
	retryWrite                       // ambiguous failures end in delivery_unknown
	retryModeration                  // like write, but never repeated after an ambiguous outcome
)

// writeMode is the retry mode for publishing an event of kind: NIP-29
// moderation (9040–9044) is never repeated after an ambiguous outcome.
func writeMode(kind int) retryMode {
	if kind >= 9040 && kind <= 9044 {
		return retryModeration
	}
	return retryWrite
}

// retry runs fn up to MaxAttempts times with the spec's jitter. Each
// attempt must build its own request (a fresh NIP-98 token).
func retry(ctx context.Context, mode retryMode, fn func(context.Context) *attempt) error {
	var last *attempt
	for n := 1; n <= MaxAttempts; n++ {
		if n > 1 {
			d := last.after
			if d == 0 {
				ceiling := jitterSecond
				if n == 3 {
					ceiling = jitterThird
				}
				d = rand.N(ceiling)
			}
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return networkErr("%s", ctx.Err())
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
		return &Error{Category: CatDeliveryUnknown,
			Message:   "delivery unknown: the relay may or may not have stored the event (" + last.err.Message + "); check with a read before sending again",
			Retryable: false}
	}
	return last.err
}

// classifyHTTP sorts a transport failure: a failed connect is safe to
// repeat; anything after the request left is ambiguous for a write.
func classifyHTTP(err error) *attempt {
	e := networkErr("%s", err)
	var op *net.OpError
	var dns *net.DNSError
	if (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns) {
		return &attempt{err: e, retry: true}
	}
	return &attempt{err: e, retry: true, ambiguous: true}
}

// retryHint reads a 429 message's "retry in N s" hint (retryIn), capped
// at maxRetryAfter; 0 when there is none.
func retryHint(text string) time.Duration {
	d, _ := retryIn(text)
	return min(d, maxRetryAfter)
}

// retryIn finds the first "retry in <N>s" (or "<N> s", the space any one
// of " \t\n\f\r") in text, N a decimal of 1 to maxRetryHintDigits whole
// digits with an optional fraction; ok is false when there is none. It is
// the one reader of the relay's hint, for the bridge's 429 retries
// (retryHint) and the subscriber's rate gate (rateHint), which each cap it
// their own way.
func retryIn(text string) (d time.Duration, ok bool) {
	const marker = "retry in "
	digits := func(s string) int {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		return n
	}
	for rest := text; ; {
		i := strings.Index(rest, marker)
		if i < 0 {
			return 0, false
		}
		rest = rest[i+len(marker):]
		n := digits(rest)
		if n == 0 || n > maxRetryHintDigits {
			continue
		}
		if n < len(rest) && rest[n] == '.' {
			if f := digits(rest[n+1:]); f > 0 {
				n += 1 + f
			}
		}
		tail := rest[n:]
		if len(tail) > 0 && strings.IndexByte(" \t\n\f\r", tail[0]) >= 0 {
			tail = tail[1:]
		}
		if !strings.HasPrefix(tail, "s") {
			continue
		}
		secs, err := strconv.ParseFloat(rest[:n], 64)
		if err != nil {
			continue
		}
		return time.Duration(secs * float64(time.Second)), true
	}
}

// jitter returns d ±20 %.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
