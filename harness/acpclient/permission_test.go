package acpclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/acp"
	"buzzbox/internal/jsonrpc"
)

// envAskAgent makes the test binary an ACP agent whose every prompt asks
// permission first and then says, as its text, the answer it got.
const envAskAgent = "BUZZ_TEST_ASK_AGENT"

// askV2 as envAskAgent's value makes the agent announce the tool call in
// a tool_call update first and then ask in v2's form: a title, and the
// call (by id only) under subject.
const askV2 = "v2"

func askAgent() int {
	conn := jsonrpc.NewConn(os.Stdin, os.Stdout, jsonrpc.Options{MaxLineBytes: 1 << 20})
	err := conn.Serve(context.Background(), func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case acp.MethodInitialize:
			return map[string]any{"protocolVersion": 1, "agentInfo": map[string]any{"name": "asker"}}, nil
		case acp.MethodSessionNew:
			return map[string]any{"sessionId": "s1"}, nil
		case acp.MethodSessionPrompt:
			var perm acp.PermissionResponse
			options := []any{map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"},
				map[string]any{"optionId": "once", "name": "Allow", "kind": "allow_once"},
				map[string]any{"optionId": "always", "name": "Always", "kind": "allow_always"}}
			params := map[string]any{"sessionId": "s1", "options": options,
				"toolCall": map[string]any{"toolCallId": "t1", "title": "shell", "rawInput": map[string]any{"command": "git push"}}}
			if os.Getenv(envAskAgent) == askV2 {
				conn.Notify(acp.MethodSessionUpdate, map[string]any{"sessionId": "s1", "update": map[string]any{"sessionUpdate": "tool_call",
					"toolCallId": "t1", "title": "Bash", "kind": "execute", "rawInput": map[string]any{"command": "git push"}}})
				params = map[string]any{"sessionId": "s1", "options": options, "title": "git push",
					"subject": map[string]any{"type": "tool_call", "toolCall": map[string]any{"toolCallId": "t1"}}}
			}
			err := conn.Call(ctx, acp.MethodPermission, params, &perm)
			said := perm.Outcome.Outcome + ":" + perm.Outcome.OptionID
			if err != nil {
				said = "error:" + err.Error()
			}
			conn.Notify(acp.MethodSessionUpdate, map[string]any{"sessionId": "s1",
				"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": said}}})
			stop := "end_turn"
			if perm.Outcome.Outcome == "cancelled" {
				stop = "cancelled"
			}
			return map[string]any{"stopReason": stop}, nil
		}
		if req.IsNotification() {
			return nil, nil
		}
		return nil, jsonrpc.Errorf(jsonrpc.MethodNotFound, "no %s", req.Method)
	})
	if err != nil && !errors.Is(err, io.EOF) {
		return 1
	}
	return 0
}

// startAsker starts the asking agent with ask as Spec.Ask.
func startAsker(t *testing.T, ask func(context.Context, PermissionAsk) (string, error), timeout time.Duration) *Agent {
	t.Helper()
	return startAskerMode(t, "1", ask, timeout)
}

func startAskerMode(t *testing.T, mode string, ask func(context.Context, PermissionAsk) (string, error), timeout time.Duration) *Agent {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Start(context.Background(), Spec{Path: exe, Argv0: exe, Env: append(os.Environ(), envAskAgent+"="+mode),
		Ask: ask, AskTimeout: timeout}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Kill)
	return a
}

// promptAnswer runs one prompt and returns its outcome and what the agent
// said it was answered.
func promptAnswer(t *testing.T, a *Agent, idle time.Duration, signal <-chan struct{}) (Outcome, string) {
	t.Helper()
	o := a.Prompt(context.Background(), "s1", []acp.ContentBlock{acp.TextBlock("go")}, idle, time.Now().Add(time.Minute), signal)
	text, _ := a.FinalText("s1")
	return o, text
}

// TestAskAnswers: the option a person picks reaches the agent; an error,
// an option the agent did not offer, or silence past the timeout reaches
// it as the reject option, never as an allow.
func TestAskAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		ask  func(context.Context, PermissionAsk) (string, error)
		want string
	}{
		{"allow once", func(context.Context, PermissionAsk) (string, error) { return "once", nil }, "selected:once"},
		{"allow always", func(context.Context, PermissionAsk) (string, error) { return "always", nil }, "selected:always"},
		{"reject", func(context.Context, PermissionAsk) (string, error) { return "no", nil }, "selected:no"},
		{"not offered", func(context.Context, PermissionAsk) (string, error) { return "yes-please", nil }, "selected:no"},
		{"error", func(context.Context, PermissionAsk) (string, error) { return "once", errors.New("relay down") }, "selected:no"},
		{"silence", func(ctx context.Context, _ PermissionAsk) (string, error) { <-ctx.Done(); return "", ctx.Err() }, "selected:no"},
		{"late allow", func(ctx context.Context, _ PermissionAsk) (string, error) { <-ctx.Done(); return "once", nil }, "selected:no"},
		{"alone", func(context.Context, PermissionAsk) (string, error) { return "", ErrDecideAlone }, "selected:once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got PermissionAsk
			a := startAsker(t, func(ctx context.Context, req PermissionAsk) (string, error) {
				got = req
				return tc.ask(ctx, req)
			}, 300*time.Millisecond)
			o, said := promptAnswer(t, a, 10*time.Second, nil)
			if o.Result != TurnOK || said != tc.want {
				t.Fatalf("outcome %v, agent was answered %q; want ok, %q", o.Result, said, tc.want)
			}
			if got.SessionID != "s1" || len(got.Options) != 3 || !strings.Contains(string(got.ToolCall), "git push") {
				t.Errorf("Ask got %+v; want session s1, three options, the tool call", got)
			}
		})
	}
}

// TestAskHoldsIdleTimeout: a person taking longer than the idle timeout to
// answer does not end the turn; the answer arrives.
func TestAskHoldsIdleTimeout(t *testing.T) {
	a := startAsker(t, func(ctx context.Context, _ PermissionAsk) (string, error) {
		time.Sleep(3 * time.Second) // three idle timeouts
		return "once", nil
	}, time.Minute)
	// The idle timeout is short next to the wait, yet long enough for the
	// agent to end its turn after the answer on a loaded machine.
	o, said := promptAnswer(t, a, time.Second, nil)
	if o.Result != TurnOK || said != "selected:once" {
		t.Fatalf("outcome %v (%v), agent was answered %q; want ok, selected:once", o.Result, o.Err, said)
	}
}

// TestAskCancelled: cancelling the turn answers the waiting request
// "cancelled" and the Ask's context ends.
func TestAskCancelled(t *testing.T) {
	asked := make(chan struct{})
	ended := make(chan error, 1)
	a := startAsker(t, func(ctx context.Context, _ PermissionAsk) (string, error) {
		close(asked)
		<-ctx.Done()
		ended <- ctx.Err()
		return "once", nil // too late: the turn was cancelled
	}, time.Minute)
	signal := make(chan struct{})
	go func() { <-asked; close(signal) }() // ends once the request is waiting
	o, said := promptAnswer(t, a, 10*time.Second, signal)
	if o.Result != TurnSignalled || said != "cancelled:" {
		t.Fatalf("outcome %v (%v), agent was answered %q; want cancelled, cancelled:", o.Result, o.Err, said)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("Ask's context ended with %v; want context.Canceled", err)
	}
}

// TestAskNoRejectOption: an agent offering no reject option is answered
// "cancelled" when nobody allows.
func TestAskNoRejectOption(t *testing.T) {
	got, _ := json.Marshal(rejectOption([]acp.PermissionOption{{OptionID: "a", Kind: "allow_once"}}))
	if string(got) != `""` {
		t.Fatalf("rejectOption without a reject = %s; want empty", got)
	}
	if id := rejectOption([]acp.PermissionOption{{OptionID: "ra", Kind: "reject_always"}, {OptionID: "a", Kind: "allow_once"}}); id != "ra" {
		t.Errorf("rejectOption = %q; want ra", id)
	}
}

// TestAskV2SubjectAndSeenCall: a request in v2's form (title, the call
// under subject) naming only the call's id reaches Ask with the call's
// title, kind and input from its earlier tool_call update.
func TestAskV2SubjectAndSeenCall(t *testing.T) {
	var got PermissionAsk
	a := startAskerMode(t, askV2, func(_ context.Context, req PermissionAsk) (string, error) {
		got = req
		return "once", nil
	}, time.Minute)
	o, said := promptAnswer(t, a, 10*time.Second, nil)
	if o.Result != TurnOK || said != "selected:once" {
		t.Fatalf("outcome %v, agent was answered %q; want ok, selected:once", o.Result, said)
	}
	var tc struct {
		Title    string `json:"title"`
		Kind     string `json:"kind"`
		RawInput struct {
			Command string `json:"command"`
		} `json:"rawInput"`
	}
	if err := json.Unmarshal(got.ToolCall, &tc); err != nil || tc.Title != "git push" || tc.Kind != "execute" || tc.RawInput.Command != "git push" {
		t.Errorf("Ask got toolCall %s (%v); want the title, kind execute and the command", got.ToolCall, err)
	}
}
