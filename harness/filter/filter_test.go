package filter

import (
	"strings"
	"testing"
	"time"
)

var ev = &Event{Content: "Alert P1: db down", Author: "ab", Kind: 9, ChannelID: "c1", Timestamp: 100}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{`str_contains(content, "P1")`, true},
		{`str_contains(content, "P2")`, false},
		{`kind == 9`, true},
		{`kind == 1`, false},
		{`str_contains(content, "P1") && kind == 9`, true},
		{`str_starts_with(content, "Alert") || false`, true},
		{`str_ends_with(content, "down")`, true},
		{`str_len(content) == 17`, true},
		{`str_len("héllo") == 6`, true},
		{`author == "ab" && channel_id == "c1"`, true},
		{`timestamp > 99 && timestamp <= 100`, true},
		{`7 / 2 == 3`, true},
		{`7 % 4 == 3`, true},
		{`1 + 2 * 3 == 7`, true},
		{`(1 + 2) * 3 == 9`, true},
		{`-2 ^ 2 == -4`, true},
		{`2 ^ 3 == 8.0`, true},
		{`10 - 3 - 2 == 5`, true},
		{`"a" + "b" == "ab"`, true},
		{`!false`, true},
		{`1; 2; kind == 9`, true},
		{`"say \"hi\" \\" == "say \"hi\" \\"`, true},
		{`1.5 < 2`, true},
		{`true || 1 == "x"`, true},
	} {
		e, err := Compile(tc.src)
		if err != nil {
			t.Errorf("Compile(%q) = %v", tc.src, err)
			continue
		}
		got, err := e.Match(ev, time.Time{})
		if err != nil || got != tc.want {
			t.Errorf("Match(%q) = %v, %v; want %v", tc.src, got, err, tc.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	for _, src := range []string{
		`kind == "9"`,   // mismatched types
		`content < 3`,   // mismatched order
		`kind`,          // not a boolean
		`kind = 3`,      // read-only
		`nosuch == 1`,   // unknown variable
		`nope(content)`, // unknown function
		`str_len(kind)`, // wrong argument type
		`1 / 0 == 1`,    // division by zero
		`str_contains(content) == true`,
		`1 == 1;`,         // chain ends empty
		`false && 1 || 2`, // || needs booleans
	} {
		e, err := Compile(src)
		if err != nil {
			t.Errorf("Compile(%q) = %v; want it to parse", src, err)
			continue
		}
		if got, err := e.Match(ev, time.Time{}); err == nil {
			t.Errorf("Match(%q) = %v, nil; want an error", src, got)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, src := range []string{
		``, `kind ==`, `(kind == 9`, `"open`, `kind == 9)`, `a $ b`, `"\n"`,
		strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300),
		strings.Repeat(" ", MaxBytes) + "1",
	} {
		if _, err := Compile(src); err == nil {
			t.Errorf("Compile(%q) = nil error; want one", src)
		}
	}
}

func TestTimeout(t *testing.T) {
	src := strings.Repeat(`content + `, 300) + `content == ""`
	e, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Match(ev, time.Now().Add(-time.Second)); err != ErrTimeout {
		t.Errorf("Match past deadline = %v; want ErrTimeout", err)
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{`str_contains(content, "P1") && kind == 9`, `1;2,3`, `-2^2`, `"a\"b"`, `f((1,2))`, `x = 3`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Compile(src)
		if err != nil {
			return
		}
		e.Match(ev, time.Now().Add(time.Second))
		// Compiling the same text again gives the same verdict.
		if _, err := Compile(e.String()); err != nil {
			t.Fatalf("recompile of %q failed: %v", src, err)
		}
	})
}
