package observer

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr/nip44"
)

func TestFitFrame(t *testing.T) {
	big := strings.Repeat("é", 100000) + "END"
	payload, _ := json.Marshal(map[string]any{"text": big, "n": json.Number("12345678901234567890"), "list": []any{"short"}})
	frame, _ := json.Marshal(Frame{Seq: 3, Kind: FrameACPRead, Timestamp: "t", Payload: payload})
	for _, limit := range []int{observerMaxPlaintext, plaintextBudget(16 << 10), 2000} {
		out := FitFrame(frame, limit)
		var f Frame
		if len(out) > limit || json.Unmarshal(out, &f) != nil || f.Seq != 3 || f.Kind != FrameACPRead {
			t.Fatalf("FitFrame(%d) = %d bytes %.200s", limit, len(out), out)
		}
		var p struct {
			Text string
			N    json.Number
			List []string
		}
		json.Unmarshal(f.Payload, &p)
		if !strings.HasPrefix(p.Text, "éé") || !strings.HasSuffix(p.Text, "END") || !strings.Contains(p.Text, "[elided ") ||
			p.N != "12345678901234567890" || len(p.List) != 1 {
			t.Errorf("FitFrame(%d) payload %.300s", limit, f.Payload)
		}
	}
	if out := FitFrame(frame, 300); !strings.Contains(string(out), `"elided":true`) {
		t.Errorf("FitFrame(300) = %s; want the payload replaced by its size", out)
	}
}

// TestPlaintextBudget: a frame of the budget's size, encrypted and signed,
// is within the relay's limit.
func TestPlaintextBudget(t *testing.T) {
	key, _ := nip44.GenerateConversationKey(strings.Repeat("02", 32), strings.Repeat("01", 32))
	for _, maxContent := range []int{4096, 16 << 10, 100 << 10, 256 << 10} {
		n := plaintextBudget(maxContent)
		ct, err := nip44.Encrypt(strings.Repeat("x", n), key)
		if err != nil {
			t.Fatalf("budget %d for %d: %v", n, maxContent, err)
		}
		if len(ct)+observerEventSlack > maxContent {
			t.Errorf("budget %d for a %d byte limit gives %d bytes of ciphertext", n, maxContent, len(ct))
		}
	}
}

func TestACPTap(t *testing.T) {
	b := NewBus()
	tap := &Tap{bus: b, kind: FrameACPRead, slot: 2}
	long := `{"x":"` + strings.Repeat("a", observerRawMaxBytes) + `"}`
	for _, chunk := range []string{`{"jsonrpc":"2.0",`, `"id":1,"result":{}}` + "\n\n" + long[:100], long[100:] + "\nnot json\n"} {
		tap.Feed([]byte(chunk))
	}
	var got []string
	for seq := uint64(0); ; {
		e, _, ok := b.after(seq)
		if !ok {
			break
		}
		seq = e.seq
		var f Frame
		json.Unmarshal(e.data, &f)
		if f.AgentIndex == nil || *f.AgentIndex != 2 || f.Kind != FrameACPRead {
			t.Errorf("frame %s", e.data)
		}
		got = append(got, string(f.Payload))
	}
	if len(got) != 3 || got[0] != `{"jsonrpc":"2.0","id":1,"result":{}}` ||
		!strings.Contains(got[1], `"elided":true`) || !strings.Contains(got[1], `"bytes":`+strconv.Itoa(len(long))) || len(got[1]) > 2*observerRawHeadBytes ||
		!strings.Contains(got[2], `"head":"not json"`) {
		t.Errorf("raw frames = %q", got)
	}
}

func TestObserverBusOverflow(t *testing.T) {
	b := NewBus()
	for range observerBufferCap + 10 {
		b.Emit(FrameTurnLiveness, NoScope, map[string]int{})
	}
	e, lost, ok := b.after(0)
	if !ok || lost != 10 || e.seq != 11 {
		t.Errorf("after(0) = seq %d, lost %d, %v; want the oldest kept (11) and 10 lost", e.seq, lost, ok)
	}
}
