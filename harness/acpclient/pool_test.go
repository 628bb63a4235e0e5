package acpclient

import (
	"testing"
	"time"
)

// TestBreakerOpensAfterCrashes: crashes close together double the respawn
// delay up to the cap and open the circuit at the third; crashes further
// apart than the window never open it.
func TestBreakerOpensAfterCrashes(t *testing.T) {
	var b Breaker
	at := time.Unix(1_000_000, 0)
	if d, open := b.Crashed(at, 20*time.Second); open || d != 20*time.Second {
		t.Fatalf("first crash: delay %v, open %v; want 20s, closed", d, open)
	}
	if d, open := b.Crashed(at.Add(time.Second), 20*time.Second); open || d != respawnCap {
		t.Fatalf("second crash: delay %v, open %v; want the cap %v, closed", d, open, respawnCap)
	}
	if _, open := b.Crashed(at.Add(2*time.Second), 20*time.Second); !open {
		t.Fatal("third crash within the window left the circuit closed")
	}
	if !b.Open(at.Add(CircuitOpenFor)) || b.Open(at.Add(2*time.Second+CircuitOpenFor)) {
		t.Error("the circuit is not open for exactly CircuitOpenFor after the third crash")
	}

	var spread Breaker
	for i := range 5 {
		if _, open := spread.Crashed(at.Add(time.Duration(i)*crashWindow), time.Second); open {
			t.Fatalf("crash %d, a window after the one before, opened the circuit", i)
		}
	}
}

// TestBreakerStartFailed: a failed start opens the circuit at once.
func TestBreakerStartFailed(t *testing.T) {
	var b Breaker
	now := time.Unix(1_000_000, 0)
	if b.Open(now) {
		t.Fatal("a new Breaker is open")
	}
	b.StartFailed(now)
	if !b.Open(now.Add(CircuitOpenFor-time.Nanosecond)) || b.Open(now.Add(CircuitOpenFor)) {
		t.Error("StartFailed did not open the circuit for CircuitOpenFor")
	}
}
