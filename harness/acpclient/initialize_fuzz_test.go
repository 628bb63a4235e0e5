package acpclient

import (
	"encoding/json"
	"testing"
)

// FuzzReadInitialize: any initialize answer decodes without a panic; one
// that decodes names a protocol no newer than offered and some agent name.
func FuzzReadInitialize(f *testing.F) {
	for _, s := range []string{
		`{"protocolVersion":1,"agentInfo":{"name":"codex-acp","version":"0"},"agentCapabilities":{"sessionCapabilities":{"close":{}}}}`,
		`{"protocolVersion":2,"info":{"name":"buzz-agent","version":"1"},"capabilities":{"session":{"mcp":{"http":{}}}}}`,
		`{"protocolVersion":2,"agentInfo":{"name":"fake"},"_meta":{"steering":{"supported":true}}}`,
		`{"protocolVersion":3}`, `{}`, `null`, `{"protocolVersion":-1,"info":null,"capabilities":{"session":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := readInitialize(json.RawMessage(b))
		if err != nil {
			return
		}
		if r.protocol > clientProtocolVersion || r.name == "" {
			t.Errorf("readInitialize(%s) = %+v", b, r)
		}
	})
}

// TestReadInitializeByVersion: a v2 answer is read under info and
// capabilities.session, a v1 answer under agentInfo and
// agentCapabilities.sessionCapabilities.
func TestReadInitializeByVersion(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		name      string
		protocol  int
		closeable bool
		prompt    bool
	}{
		{`{"protocolVersion":2,"info":{"name":"Buzz-Agent","version":"1"},"capabilities":{"session":{}}}`, "buzz-agent", 2, true, false},
		{`{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","version":"0.101.0"},"agentCapabilities":{"sessionCapabilities":{"close":{},"systemPrompt":{"mode":{"override":{}}}}}}`, "@agentclientprotocol/claude-agent-acp", 1, true, true},
		{`{"agentInfo":{"name":"old"}}`, "old", 1, false, false},
		{`{"protocolVersion":1,"info":{"name":"ignored"},"serverInfo":{"name":"srv"}}`, "srv", 1, false, false},
	} {
		r, err := readInitialize(json.RawMessage(tc.raw))
		if err != nil || r.name != tc.name || r.protocol != tc.protocol || r.closeable != tc.closeable || r.systemPrompt != tc.prompt {
			t.Errorf("readInitialize(%s) = %+v, %v", tc.raw, r, err)
		}
	}
	if _, err := readInitialize(json.RawMessage(`{"protocolVersion":3}`)); err == nil {
		t.Errorf("a version newer than offered was accepted")
	}
}

// TestReadInitializeImages: promptCapabilities.image (v1), and v2's
// prompt.image marker as buzz-agent writes it, let prompts carry images.
func TestReadInitializeImages(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":true}}}`:  true,
		`{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":false}}}`: false,
		`{"protocolVersion":2,"capabilities":{"session":{},"prompt":{"image":{}}}}`:        true,
		`{"protocolVersion":2,"capabilities":{"session":{},"prompt":{"image":null}}}`:      false,
		`{"protocolVersion":1,"capabilities":{"prompt":{"image":{}}}}`:                     false,
		`{"protocolVersion":2,"capabilities":{"session":{}}}`:                              false,
	} {
		if r, err := readInitialize(json.RawMessage(raw)); err != nil || r.images != want {
			t.Errorf("readInitialize(%s).images = %v, %v; want %v", raw, r.images, err, want)
		}
	}
}
