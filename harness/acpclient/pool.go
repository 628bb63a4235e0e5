package acpclient

import (
	"math"
	"time"
)

// The pool's circuit breaker (spec §8.4): an agent that crashes
// crashesToOpen times within crashWindow is not respawned for
// CircuitOpenFor, nor is one that failed to start; until then each crash
// is respawned after a delay doubling from the caller's base, capped at
// respawnCap.
const (
	crashWindow    = 60 * time.Second
	crashesToOpen  = 3
	CircuitOpenFor = 300 * time.Second
	respawnCap     = 30 * time.Second
)

// RespawnBase is the first respawn delay after a crash.
const RespawnBase = time.Second

// Breaker is one pool slot's crash history and circuit. The zero Breaker
// is closed with no crashes. It is not safe for concurrent use: the
// goroutine that owns the slot owns its Breaker.
type Breaker struct {
	crashes   []time.Time // within crashWindow of the latest
	openUntil time.Time
}

// Open reports whether the circuit is open at now: no agent is to be
// started in the slot.
func (b *Breaker) Open(now time.Time) bool { return now.Before(b.openUntil) }

// StartFailed opens the circuit at now: an agent that could not start is
// not tried again for CircuitOpenFor.
func (b *Breaker) StartFailed(now time.Time) { b.openUntil = now.Add(CircuitOpenFor) }

// Crashed records a crash at now. It returns how long to wait before the
// respawn (base doubled per recent crash, at most respawnCap; the caller
// adds jitter), or open true when this crash opened the circuit instead.
func (b *Breaker) Crashed(now time.Time, base time.Duration) (delay time.Duration, open bool) {
	recent := b.crashes[:0]
	for _, c := range b.crashes {
		if now.Sub(c) < crashWindow {
			recent = append(recent, c)
		}
	}
	b.crashes = append(recent, now)
	if len(b.crashes) >= crashesToOpen {
		b.openUntil = now.Add(CircuitOpenFor)
		b.crashes = nil
		return 0, true
	}
	d := time.Duration(float64(base) * math.Pow(2, float64(len(b.crashes)-1)))
	return min(d, respawnCap), false
}
