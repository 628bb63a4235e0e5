package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	jsoniter "github.com/json-iterator/go"

	"buzzbox/internal/testexe"
)

// TestDeadMethodElimination links the executable with the linker's
// dependency dump and fails if any function reached calls a reflect method
// lookup by a name the compiler cannot see. One such call anywhere makes
// the linker keep every exported method of every type in the executable
// (several megabytes, and start-up time for every identity); see
// DEVELOPERS.md for how json-iterator and protobuf did it together.
func TestDeadMethodElimination(t *testing.T) {
	if testing.Short() {
		t.Skip("links the whole executable")
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-dumpdep", "-o", filepath.Join(t.TempDir(), "buzzbox"), ".")
	cmd.Dir = testexe.ModuleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build -ldflags=-dumpdep: %v\n%s", err, tail(stderr.String(), 2000))
	}
	var offenders []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "<ReflectMethod>") {
			offenders = append(offenders, line)
		}
	}
	if len(offenders) > 0 {
		t.Errorf("%d reachable reflect-method edges turn off dead-method elimination; first ones:\n%s",
			len(offenders), strings.Join(offenders[:min(len(offenders), 10)], "\n"))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestJSONIterStandIn checks the stand-in for github.com/json-iterator/go
// (third_party/jsoniter) keeps the behaviour go-nostr relies on.
func TestJSONIterStandIn(t *testing.T) {
	v := map[string]any{"content": "<b>&</b>", "n": 1.5}
	got, err := jsoniter.ConfigFastest.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":"<b>&</b>","n":1.5}`; string(got) != want {
		t.Errorf("ConfigFastest.Marshal = %s, want %s (no HTML escaping, no newline)", got, want)
	}
	got, err = jsoniter.ConfigDefault.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":"\u003cb\u003e\u0026\u003c/b\u003e","n":1.5}`; string(got) != want {
		t.Errorf("ConfigDefault.Marshal = %s, want %s", got, want)
	}
	var back struct {
		Content string  `json:"content"`
		N       float64 `json:"n"`
	}
	if err := jsoniter.ConfigFastest.Unmarshal(got, &back); err != nil || back.Content != "<b>&</b>" || back.N != 1.5 {
		t.Errorf("Unmarshal = %+v, %v", back, err)
	}
	var raw []jsoniter.RawMessage
	if err := jsoniter.NewDecoder(strings.NewReader(`["EVENT", {"id": "x"}]`)).Decode(&raw); err != nil || len(raw) != 2 || string(raw[1]) != `{"id": "x"}` {
		t.Errorf("NewDecoder.Decode = %q, %v", raw, err)
	}
	if err := jsoniter.ConfigFastest.Unmarshal([]byte(`{"content": 3}`), &back); err == nil {
		t.Error("Unmarshal of a number into a string succeeded")
	}
}
