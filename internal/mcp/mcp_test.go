package mcp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// wireTypes returns a fresh value of every shared shape, for decoding into.
func wireTypes() []any {
	return []any{
		&Implementation{}, &ClientCapabilities{}, &ServerCapabilities{},
		&InitializeParams{}, &InitializeResult{}, &DiscoverResult{},
		&Tool{}, &ListToolsParams{}, &ListToolsResult{},
		&CallToolParams{}, &CallToolResult{}, &Content{},
		&ProgressParams{}, &CancelledParams{}, &UnsupportedVersionData{},
	}
}

// FuzzRoundTrip: whatever JSON a peer sends, a shape that decodes it
// re-encodes to JSON that decodes to the same value, and encoding is then
// stable: nothing a peer sent is silently changed by passing through.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{
		`{"protocolVersion":"2025-11-25","capabilities":{"experimental":{"buzz/hooks":{}}},"clientInfo":{"name":"buzz-agent","version":"1"}}`,
		`{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"buzz-dev-mcp","title":"t","version":"devel"},"instructions":"x"}`,
		`{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"ttlMs":3600000,"cacheScope":"private","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":false}}}`,
		`{"tools":[{"name":"shell","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":true}}],"nextCursor":"2"}`,
		`{"name":"read_file","arguments":{"path":"a < b"},"_meta":{"progressToken":7}}`,
		`{"content":[{"type":"text","text":""},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"resource","resource":{"uri":"file:///x"}}],"structuredContent":{"n":1.5,"s":[null,true]},"isError":true}`,
		`{"type":"resource_link","uri":"https://example.com/x","mimeType":"text/plain"}`,
		`{"progressToken":"p","progress":3,"total":9,"message":"m"}`,
		`{"requestId":"s4","reason":"timeout"}`,
		`{"supported":["2026-07-28","2025-11-25"],"requested":"2030-01-01"}`,
		`{"cursor":""}`, `null`, `{}`, `{"name":null,"arguments":null,"_meta":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v1 := range wireTypes() {
			if json.Unmarshal(data, v1) != nil {
				continue
			}
			b1, err := json.Marshal(v1)
			if err != nil {
				t.Fatalf("%T from %q: encode: %v", v1, data, err)
			}
			v2 := reflect.New(reflect.TypeOf(v1).Elem()).Interface()
			if err := json.Unmarshal(b1, v2); err != nil {
				t.Fatalf("%T: %q re-encoded as %q, which does not decode: %v", v1, data, b1, err)
			}
			b2, err := json.Marshal(v2)
			if err != nil {
				t.Fatalf("%T from %q: second encode: %v", v2, b1, err)
			}
			if !bytes.Equal(b1, b2) {
				t.Fatalf("%T from %q: encoding not stable:\n%s\n%s", v1, data, b1, b2)
			}
			v3 := reflect.New(reflect.TypeOf(v1).Elem()).Interface()
			if err := json.Unmarshal(b2, v3); err != nil || !reflect.DeepEqual(v2, v3) {
				t.Fatalf("%T from %q: decoded %#v, then %#v (%v)", v1, data, v2, v3, err)
			}
			if exact(v1) && !reflect.DeepEqual(v1, v2) {
				t.Fatalf("%T from %q: decoded %#v, after re-encoding %#v", v1, data, v1, v2)
			}
		}
	})
}

// exact reports whether v holds no json.RawMessage or any, whose bytes or
// number types legitimately change on re-encoding (compaction, HTML
// escapes); such a value must survive the first round trip unchanged.
func exact(v any) bool {
	switch v.(type) {
	case *Implementation, *ServerCapabilities, *ListToolsParams, *Content, *UnsupportedVersionData:
		return true
	}
	return false
}

// TestTextBlockKeepsEmptyText: a text block with no text still carries
// "text":"" (the schema requires it; the hooks answer "no objection" so),
// while other blocks leave empty members out.
func TestTextBlockKeepsEmptyText(t *testing.T) {
	for _, tc := range []struct {
		c    Content
		want string
	}{
		{TextContent(""), `{"type":"text","text":""}`},
		{TextContent("a<b"), `{"type":"text","text":"a\u003cb"}`},
		{Content{Type: ContentImage, Data: "AAAA", MimeType: "image/png"}, `{"type":"image","data":"AAAA","mimeType":"image/png"}`},
		{Content{Type: ContentResourceLink, URI: "u"}, `{"type":"resource_link","uri":"u"}`},
	} {
		b, err := json.Marshal(tc.c)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal(%#v) = %s, %v; want %s", tc.c, b, err, tc.want)
		}
	}
}

// TestAbsentHintsStayAbsent: a tool whose server gave no annotation hints
// is re-encoded without them, since an absent hint means the spec's
// default (destructive, open-world), not false.
func TestAbsentHintsStayAbsent(t *testing.T) {
	var tool Tool
	if err := json.Unmarshal([]byte(`{"name":"x","annotations":{"readOnlyHint":false}}`), &tool); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(tool)
	if want := `{"name":"x","annotations":{"readOnlyHint":false}}`; string(b) != want {
		t.Errorf("re-encoded %s; want %s", b, want)
	}
}
