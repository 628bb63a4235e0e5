package rg

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"buzzbox/internal/proc"
)

func TestParseArgsGNUForms(t *testing.T) {
	o, err := parseArgs([]string{"-inA3", "-epat", "--glob=*.go", "src", "-B", "2", "--max-count", "5", "--", "-x"})
	if err != nil {
		t.Fatal(err)
	}
	if o.caseMode != caseIgnore || o.lineNumber == nil || !*o.lineNumber || o.after != 3 || !o.afterSet {
		t.Errorf("clustered -inA3 parsed as case=%v n=%v A=%d", o.caseMode, o.lineNumber, o.after)
	}
	if len(o.patterns) != 1 || o.patterns[0] != "pat" {
		t.Errorf("-epat gave patterns %q", o.patterns)
	}
	if len(o.globs) != 1 || o.globs[0].glob != "*.go" {
		t.Errorf("--glob=*.go gave %v", o.globs)
	}
	if o.before != 2 || o.maxCount != 5 {
		t.Errorf("-B 2 --max-count 5 gave B=%d m=%d", o.before, o.maxCount)
	}
	if strings.Join(o.paths, ",") != "src,-x" {
		t.Errorf("paths = %q; want src and -x (after --)", o.paths)
	}
}

func TestParseArgsPatternFirstPositional(t *testing.T) {
	o, err := parseArgs([]string{"foo", "a", "-n", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if o.patterns[0] != "foo" || strings.Join(o.paths, ",") != "a,b" {
		t.Errorf("patterns %q paths %q", o.patterns, o.paths)
	}
}

// TestUnsupportedFlag pins the one-line refusal: exit 2, the flag named,
// the nearest supported flag suggested.
func TestUnsupportedFlag(t *testing.T) {
	for flag, near := range map[string]string{
		"--hiden":            "--hidden",
		"--files-with-match": "--files-with-matches",
		"-Z":                 "-",
		"--sort-by=path":     "--sort",
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{flag, "foo"}, proc.Env{Stdout: &out, Stderr: &errb})
		msg := errb.String()
		if code != 2 || out.Len() != 0 || strings.Count(msg, "\n") != 1 {
			t.Errorf("rg %s foo = exit %d, stdout %q, stderr %q; want exit 2 and one stderr line", flag, code, out.String(), msg)
		}
		name, _, _ := strings.Cut(flag, "=")
		if !strings.Contains(msg, "unsupported flag "+name) || !strings.Contains(msg, "nearest supported flag: "+near) {
			t.Errorf("rg %s: stderr %q; want it to name %s and suggest %s", flag, msg, name, near)
		}
	}
}

func TestTypeListHasRequiredTypes(t *testing.T) {
	var out bytes.Buffer
	if code := Run(context.Background(), []string{"--type-list"}, proc.Env{Stdout: &out}); code != 0 {
		t.Fatalf("--type-list exit %d", code)
	}
	for _, ty := range strings.Fields("c cpp go rust py js ts java kotlin md json yaml toml sh html css sql") {
		if !strings.Contains(out.String(), "\n"+ty+": ") && !strings.HasPrefix(out.String(), ty+": ") {
			t.Errorf("--type-list lacks %s", ty)
		}
	}
}

// FuzzParseArgs feeds arbitrary argument vectors (NUL-separated) to the
// parser: no panics, and a success always yields a pattern or a mode that
// needs none.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{"foo", "-inA3\x00foo", "--glob=x\x00-e\x00a", "-C\x00", "--\x00-x", "--files\x00-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		o, err := parseArgs(args)
		if err != nil {
			return
		}
		if len(o.patterns) == 0 && len(o.patternFiles) == 0 && !o.files && !o.typeList && !o.help && !o.version {
			t.Fatalf("parseArgs(%q) gave no pattern", args)
		}
	})
}
