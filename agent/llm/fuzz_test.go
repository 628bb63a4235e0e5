package llm

import (
	"io"
	"strings"
	"testing"
)

func FuzzSSEReader(f *testing.F) {
	f.Add("event: x\ndata: {\"a\":1}\n\n: comment\ndata: a\ndata: b\n\n")
	f.Add("data: [DONE]\r\n\r\n")
	f.Add("data")
	f.Fuzz(func(t *testing.T, s string) {
		sr := newSSEReader(strings.NewReader(s))
		for i := 0; i < 10000; i++ {
			ev, err := sr.next()
			if err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(ev.data) > len(s) {
				t.Fatal("event data longer than input")
			}
		}
	})
}

func FuzzChatParse(f *testing.F) {
	f.Add(`{"choices":[{"finish_reason":"tool_calls","message":{"content":"x","tool_calls":[{"id":"a","function":{"name":"n","arguments":"{}"}}]}}]}`)
	f.Add(`{"choices":[{"message":{"content":[{"type":"reasoning","summary":[{"text":"r"}]}]}}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		resp, err := chatDialect{}.parse([]byte(s))
		if err == nil && resp == nil {
			t.Fatal("nil response without error")
		}
	})
}

func FuzzAnthropicStream(f *testing.F) {
	f.Add("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"b\",\"input\":{}}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		req := &Request{OnText: func(string) {}, OnThought: func(string) {}}
		_, _ = anthropicDialect{}.stream(newSSEReader(strings.NewReader(s)), req)
	})
}

func TestAnthropicStreamHostileIndex(t *testing.T) {
	for _, idx := range []string{"-1", "1000000000"} {
		s := "data: {\"type\":\"content_block_delta\",\"index\":" + idx + ",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n"
		req := &Request{OnText: func(string) {}, OnThought: func(string) {}}
		if _, err := (anthropicDialect{}).stream(newSSEReader(strings.NewReader(s)), req); err != nil {
			t.Logf("index %s: %v", idx, err)
		}
	}
}

func TestResponseOverCapFails(t *testing.T) {
	big := strings.Repeat("x", maxResponseBytes+10)
	cr := &capReader{r: strings.NewReader(big), left: maxResponseBytes}
	if _, err := io.ReadAll(cr); err != errTooLarge {
		t.Errorf("ReadAll over the cap = %v; want errTooLarge", err)
	}
	cr = &capReader{r: strings.NewReader(big[:maxResponseBytes]), left: maxResponseBytes}
	if _, err := io.ReadAll(cr); err != nil {
		t.Errorf("ReadAll at the cap = %v", err)
	}
}

func TestReasoningDetailsFragmentsMerged(t *testing.T) {
	var m detailsMerger
	m.add([]byte(`{"type":"reasoning.text","index":0,"text":"ab"}`))
	m.add([]byte(`{"type":"reasoning.text","index":0,"text":"cd","signature":"s1"}`))
	m.add([]byte(`{"type":"reasoning.encrypted","index":1,"data":"zz"}`))
	got := m.result()
	if len(got) != 2 {
		t.Fatalf("result = %s", got)
	}
	if s := string(got[0]); !strings.Contains(s, `"text":"abcd"`) || !strings.Contains(s, `"signature":"s1"`) {
		t.Errorf("merged = %s", s)
	}
	if string(got[1]) != `{"type":"reasoning.encrypted","index":1,"data":"zz"}` {
		t.Errorf("single fragment not kept verbatim: %s", got[1])
	}
}
