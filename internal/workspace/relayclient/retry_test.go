package relayclient

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// oldRetryHint is the regexp the CLI read a 429's hint with, taught
// fractions as the subscriber's rate gate reads them; retryHint must agree
// with it on every text.
func oldRetryHint(text string) time.Duration {
	m := regexp.MustCompile(`retry in (\d{1,6}(?:\.\d+)?)\s?s`).FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	return min(time.Duration(n*float64(time.Second)), maxRetryAfter)
}

func TestRetryHint(t *testing.T) {
	for _, tc := range []struct {
		text string
		want time.Duration
	}{
		{"rate-limited: retry in 3s", 3 * time.Second},
		{"rate-limited: retry in 4 s", 4 * time.Second},
		{"slow down; retry in 1234567s; retry in 2s", 2 * time.Second},
		{"retry in 99999s", maxRetryAfter},
		{"retry in s", 0},
		{"retry in 5  s", 0},
		{"retry in 5ms", 0},
		{"retry in 2.5s", 2500 * time.Millisecond},
		{"retry in 2.s", 0},
		{"no hint", 0},
	} {
		if got := retryHint(tc.text); got != tc.want {
			t.Errorf("retryHint(%q) = %v; want %v", tc.text, got, tc.want)
		}
	}
}

func FuzzRetryHint(f *testing.F) {
	for _, s := range []string{"retry in 3s", "retry in 4 s", "retry in 1234567s retry in 2\ts", "retry in retry in 5s", "retry in 7\ns", "retry in ５s", "retry in 1.25 s", "retry in 3.x s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := retryHint(text), oldRetryHint(text); got != want {
			t.Errorf("retryHint(%q) = %v; the regexp reads %v", text, got, want)
		}
	})
}

func FuzzParseInfo(f *testing.F) {
	for _, s := range []string{`{"http_bridge":{"query":"/query"},"limitation":{"auth_required":true,"max_content_length":65536,"max_message_length":131072}}`,
		`{"http_bridge":null}`, `{"limitation":{"max_message_length":-5}}`, `[]`, `garbage`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		info := parseInfo(b)
		if info.MaxContent < 0 {
			t.Errorf("parseInfo(%q).MaxContent = %d; want ≥ 0", b, info.MaxContent)
		}
	})
}
