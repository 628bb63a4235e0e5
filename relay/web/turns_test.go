package web_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// turnCard is one status as testdata/turns.mjs reports it.
type turnCard struct {
	State, Step, Cause, By, Owner, Line, WaitingLine string
	StartedAt                                        int64
	OwnerMayStop, StrangerMayStop, AdminMayStop      bool
}

// TestTurnsModule runs turns.js under node over a turn's status events,
// out of order and with garbage among them: each message keeps its newest
// status per agent, a working update without a step keeps the step shown,
// the lines say who did what (and who stopped it), only the owner and an
// admin may stop a running turn, and elapsed times read as people write them.
func TestTurnsModule(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP(loud): node is not installed; turns.js is not tested")
	}
	agent, owner, msg, other := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("1", 64), strings.Repeat("2", 64)
	ev := func(content string, ids ...string) map[string]any {
		tags := [][]string{{"h", "c"}}
		for _, id := range ids {
			tags = append(tags, []string{"e", id})
		}
		return map[string]any{"kind": 20100, "pubkey": agent, "created_at": 1, "content": content, "tags": tags}
	}
	events := []map[string]any{
		ev(`{"state":"seen","at":1000,"owner":"`+owner+`"}`, msg),
		ev(`{"state":"working","at":2000,"startedAt":2000,"turn":"t1","step":"shell","owner":"`+owner+`"}`, msg, other),
		ev(`{"state":"queued","at":1500}`, msg), // late: older than what is shown
		ev(`{"state":"working","at":3000,"startedAt":2000,"turn":"t1","owner":"`+owner+`"}`, msg),
		ev(`{"state":"thinking","at":9000}`, msg), // no such state
		ev(`not json`, msg),
		ev(`{"state":"done","at":9000}`), // names no message
		ev(`{"state":"cancelled","at":4000,"by":"`+owner+`"}`, other),
	}
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	in, _ := json.Marshal(map[string]any{"dir": dir, "events": events, "ask": []string{msg, other}})
	cmd := exec.Command(node, filepath.Join("testdata", "turns.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node turns.mjs: %v", err)
	}
	var out struct {
		Changed []bool
		Cards   map[string][]turnCard
		Elapsed []string
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("turns.mjs output %s: %v", b, err)
	}
	if want := []bool{true, true, false, true, false, false, false, true}; !slices.Equal(out.Changed, want) {
		t.Errorf("add() = %v; want %v", out.Changed, want)
	}
	if c := out.Cards[msg]; len(c) != 1 || c[0].State != "working" || c[0].Step != "shell" || c[0].StartedAt != 2000 ||
		c[0].Line != "aaaa is working on this" || c[0].WaitingLine != "aaaa is waiting for approval" {
		t.Errorf("message card = %+v; want working on shell since 2000", c)
	} else if !c[0].OwnerMayStop || c[0].StrangerMayStop || !c[0].AdminMayStop {
		t.Errorf("who may stop: owner %v, stranger %v, admin %v; want true, false, true", c[0].OwnerMayStop, c[0].StrangerMayStop, c[0].AdminMayStop)
	}
	if c := out.Cards[other]; len(c) != 1 || c[0].Line != "aaaa's turn was stopped by bbbb" || c[0].OwnerMayStop {
		t.Errorf("other message's card = %+v; want stopped by the owner, no Stop", c)
	}
	if want := []string{"0s", "9s", "1m 05s", "1h 02m"}; !slices.Equal(out.Elapsed, want) {
		t.Errorf("elapsed = %v; want %v", out.Elapsed, want)
	}
}
