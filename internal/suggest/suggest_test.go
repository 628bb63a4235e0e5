package suggest

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"rg", "rg", 0}, {"rgg", "rg", 1}, {"", "abc", 3},
		{"kitten", "sitting", 3}, {"--hiden", "--hidden", 1}, {"tree", "rg", 3},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d; want %d (symmetry)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	names := []string{"buzz", "buzz-agent", "rg", "tree"}
	tests := []struct {
		s    string
		max  int
		want string
	}{
		{"rgg", 2, "rg"},
		{"tre", 2, "tree"},
		{"buz", 2, "buzz"},
		{"zzzzzzzz", 2, ""},
		{"zzzzzzzz", -1, "buzz"},
		{"x", -1, "rg"},
	}
	for _, tt := range tests {
		if got := Nearest(tt.s, names, tt.max); got != tt.want {
			t.Errorf("Nearest(%q, %d) = %q; want %q", tt.s, tt.max, got, tt.want)
		}
	}
	if got := Nearest("a", nil, -1); got != "" {
		t.Errorf("Nearest with no candidates = %q", got)
	}
}

func TestNearestTieKeepsFirst(t *testing.T) {
	if got := Nearest("aa", []string{"ab", "ba"}, -1); got != "ab" {
		t.Errorf("Nearest tie = %q; want the first, ab", got)
	}
}
