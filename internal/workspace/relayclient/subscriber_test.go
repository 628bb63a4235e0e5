package relayclient

import (
	"testing"
	"time"
)

func TestSinceRules(t *testing.T) {
	s := &subState{opt: SubOptions{Floor: 1000}}
	if got := s.since(); got != 995 {
		t.Errorf("since floor = %d; want 995", got)
	}
	s.lastSeen = 2000
	if got := s.since(); got != 1995 {
		t.Errorf("since last seen = %d; want 1995", got)
	}
	s.dropped = 1500
	if got := s.since(); got != 1495 {
		t.Errorf("since dropped = %d; want 1495", got)
	}
}

func TestRateHint(t *testing.T) {
	for _, tc := range []struct {
		reason string
		want   time.Duration
	}{
		{"rate-limited: slow down; retry in 30 s", 30 * time.Second},
		{"rate-limited: retry in 2.5s", 2500 * time.Millisecond},
		{"rate-limited: more than 50 events/s; retry in 1s", rateGateDefault},
		{"rate-limited: go away", rateGateDefault},
		{"rate-limited: retry in soon", rateGateDefault},
		{"rate-limited: retry in 999999 s", rateGateMax},
		{"rate-limited: retry in 1e9 s", rateGateDefault},
		{"rate-limited: retry in +Inf s", rateGateDefault},
		{"rate-limited: retry in 1234567s; retry in 3s", 3 * time.Second},
	} {
		if got := rateHint(tc.reason); got != tc.want {
			t.Errorf("rateHint(%q) = %v; want %v", tc.reason, got, tc.want)
		}
	}
}
