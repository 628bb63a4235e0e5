package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"buzzbox/harness/acpclient"
	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/leakcheck"
	"buzzbox/internal/testexe"
)

// Environment switches of the fake ACP agent the test binary becomes.
const (
	envFakeAgent    = "BUZZ_TEST_FAKE_AGENT"    // mode: echo, hang, die, oversize, garbage, deaf, stuck, keepalive
	envFakeLog      = "BUZZ_TEST_AGENT_LOG"     // file the fake appends every message to
	envFakeProtocol = "BUZZ_TEST_FAKE_PROTOCOL" // protocolVersion it answers (default min(client, 2))
	envFakeName     = "BUZZ_TEST_FAKE_NAME"     // agentInfo.name
	envFakeStop     = "BUZZ_TEST_FAKE_STOP"     // stop reason of echo turns
	envFakeMarker   = "BUZZ_TEST_FAKE_MARKER"   // die mode: dies only while this file is absent
	envFakeSteering = "BUZZ_TEST_FAKE_STEERING" // advertise _meta.steering.supported
	envFakeError    = "BUZZ_TEST_FAKE_ERROR"    // prompts fail with this JSON-RPC error message
	envFakeUsage    = "BUZZ_TEST_FAKE_USAGE"    // report usage per turn (fakeTurnUsage), naming this model
	envFakeLinger   = "BUZZ_TEST_FAKE_LINGER"   // keep running after stdin closes, as codex-acp does
	envFakeImages   = "BUZZ_TEST_FAKE_IMAGES"   // advertise promptCapabilities.image
)

// fakeTurnUsage is what a fake reporting usage adds to its session's
// cumulative counters on every turn.
var fakeTurnUsage = struct {
	input, output, total, cached int64
	cost                         float64
}{input: 100, output: 20, total: 125, cached: 40, cost: 0.5}

func TestMain(m *testing.M) {
	if mode := os.Getenv(envFakeAgent); mode != "" {
		os.Exit(fakeAgent(mode))
	}
	os.Exit(testexe.RunTests(m, leakcheck.AfterAll))
}

type fakeLogLine struct {
	Pid    int             `json:"pid"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
	Note   string          `json:"note,omitempty"`
	T      int64           `json:"t"` // receipt time, unix nanoseconds
}

func fakeLog(method string, params json.RawMessage, note string) {
	path := os.Getenv(envFakeLog)
	if path == "" {
		return
	}
	b, _ := json.Marshal(fakeLogLine{Pid: os.Getpid(), Method: method, Params: params, Note: note, T: time.Now().UnixNano()})
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	f.Write(append(b, '\n'))
	f.Close()
}

// fakeAgent is a scripted ACP agent on stdin/stdout.
func fakeAgent(mode string) int {
	var conn *jsonrpc.Conn
	var mu sync.Mutex
	cancels := map[string]context.CancelFunc{}
	n := 0
	out := os.Stdout
	var deaf atomic.Bool
	turns := map[string]int64{} // usage-reporting turns per session
	// reportUsage adds fakeTurnUsage to the session's counters and says so,
	// when envFakeUsage asks for usage reports.
	reportUsage := func(session string) {
		model := os.Getenv(envFakeUsage)
		if model == "" {
			return
		}
		mu.Lock()
		turns[session]++
		n := turns[session]
		mu.Unlock()
		u := fakeTurnUsage
		conn.Notify("_goose/unstable/session/update", map[string]any{"sessionId": session,
			"update": map[string]any{"sessionUpdate": "usage_update", "accumulatedInputTokens": n * u.input,
				"accumulatedOutputTokens": n * u.output, "accumulatedTotalTokens": n * u.total,
				"accumulatedCachedInputTokens": n * u.cached, "accumulatedCost": float64(n) * u.cost, "model": model}})
	}
	handler := func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		fakeLog(req.Method, req.Params, "")
		switch req.Method {
		case "initialize":
			var p struct {
				ProtocolVersion int `json:"protocolVersion"`
			}
			json.Unmarshal(req.Params, &p)
			v := min(p.ProtocolVersion, 2)
			if s := os.Getenv(envFakeProtocol); s != "" {
				fmt.Sscan(s, &v)
			}
			name := os.Getenv(envFakeName)
			if name == "" {
				name = "fake"
			}
			res := map[string]any{"protocolVersion": v, "agentInfo": map[string]any{"name": name, "version": "0"},
				"agentCapabilities": map[string]any{"sessionCapabilities": map[string]any{"close": map[string]any{}}},
				"authMethods":       []any{map[string]any{"id": "login", "name": "Log in"}}}
			if os.Getenv(envFakeImages) != "" {
				res["agentCapabilities"].(map[string]any)["promptCapabilities"] = map[string]any{"image": true}
			}
			if os.Getenv(envFakeSteering) != "" {
				res["_meta"] = map[string]any{"steering": map[string]any{"supported": true}}
			}
			return res, nil
		case "session/new":
			mu.Lock()
			n++
			id := fmt.Sprintf("s%d-%d", os.Getpid(), n)
			mu.Unlock()
			return map[string]any{"sessionId": id, "modes": map[string]any{"availableModes": []any{map[string]any{"id": "bypassPermissions"}}},
				"models": map[string]any{"availableModels": []any{map[string]any{"modelId": "m1"}, map[string]any{"modelId": "m2"}}}}, nil
		case "session/set_config_option", "session/set_model", "authenticate", "session/close":
			return map[string]any{}, nil
		case "_session/steering":
			if mode == "stuck" {
				waitFile(os.Getenv(envFakeMarker))
			}
			return map[string]any{"outcome": "injected"}, nil
		case "session/cancel":
			var p struct {
				SessionID string `json:"sessionId"`
			}
			json.Unmarshal(req.Params, &p)
			mu.Lock()
			if c := cancels[p.SessionID]; c != nil {
				c()
			}
			mu.Unlock()
			return nil, nil
		case "session/prompt":
			var p struct {
				SessionID string `json:"sessionId"`
			}
			json.Unmarshal(req.Params, &p)
			pctx, cancel := context.WithCancel(ctx)
			defer cancel()
			mu.Lock()
			cancels[p.SessionID] = cancel
			mu.Unlock()
			if msg := os.Getenv(envFakeError); msg != "" {
				return nil, jsonrpc.Errorf(-32000, "%s", msg)
			}
			switch mode {
			case "dieall":
				os.Exit(3)
			case "die":
				marker := os.Getenv(envFakeMarker)
				if _, err := os.Stat(marker); err != nil {
					os.WriteFile(marker, nil, 0o600)
					os.Exit(3)
				}
			case "hang":
				reportUsage(p.SessionID) // when asked to: a turn that spends, then waits
				<-pctx.Done()
				return map[string]any{"stopReason": "cancelled"}, nil
			case "oversize":
				mu.Lock()
				out.Write([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"x":"` + strings.Repeat("a", acpclient.MaxLineBytes) + `"}}` + "\n"))
				mu.Unlock()
				<-pctx.Done()
				return map[string]any{"stopReason": "cancelled"}, nil
			case "garbage":
				out.Write([]byte("\xff\xfe not utf-8\n"))
				<-pctx.Done()
				return map[string]any{"stopReason": "cancelled"}, nil
			case "deaf":
				// Once (while the marker is absent): stop reading stdin, then
				// send requests whose error replies overfill the pipe.
				marker := os.Getenv(envFakeMarker)
				if _, err := os.Stat(marker); err == nil {
					break
				}
				os.WriteFile(marker, nil, 0o600)
				deaf.Store(true)
				mu.Lock()
				pad := strings.Repeat("p", 100)
				for i := range deafFlood {
					out.Write([]byte(`{"jsonrpc":"2.0","id":"flood-` + fmt.Sprint(i) + pad + `","method":"x/flood"}` + "\n"))
				}
				mu.Unlock()
				<-pctx.Done()
				return map[string]any{"stopReason": "cancelled"}, nil
			case "stuck":
				// Silent, and deaf to session/cancel, until the marker exists.
				waitFile(os.Getenv(envFakeMarker))
			case "gate":
				marker := os.Getenv(envFakeMarker)
				for {
					if _, err := os.Stat(marker); err == nil {
						break
					}
					select {
					case <-pctx.Done():
						return map[string]any{"stopReason": "cancelled"}, nil
					case <-time.After(10 * time.Millisecond):
					}
				}
			case "slow":
				<-pctx.Done()
				return map[string]any{"stopReason": "cancelled"}, nil
			case "keepalive":
				// Waits on a model that never answers, sending only the
				// keepalive updates buzz-agent sends meanwhile.
				tk := time.NewTicker(50 * time.Millisecond)
				defer tk.Stop()
				for {
					select {
					case <-pctx.Done():
						return map[string]any{"stopReason": "cancelled"}, nil
					case <-tk.C:
						conn.Notify("session/update", map[string]any{"sessionId": p.SessionID, "update": map[string]any{"sessionUpdate": "keepalive"}})
					}
				}
			}
			conn.Notify("session/update", map[string]any{"sessionId": p.SessionID,
				"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "ok"}}})
			reportUsage(p.SessionID)
			var perm struct {
				Outcome struct {
					Outcome  string `json:"outcome"`
					OptionID string `json:"optionId"`
				} `json:"outcome"`
			}
			err := conn.Call(pctx, "session/request_permission", map[string]any{"sessionId": p.SessionID,
				"toolCall": map[string]any{"toolCallId": "t1"},
				"options": []any{map[string]any{"optionId": "r", "name": "Reject", "kind": "reject_once"},
					map[string]any{"optionId": "a1", "name": "Allow", "kind": "allow_once"},
					map[string]any{"optionId": "aa", "name": "Always", "kind": "allow_always"}}}, &perm)
			fakeLog("permission-answer", nil, perm.Outcome.OptionID+fmt.Sprint(err))
			stop := os.Getenv(envFakeStop)
			if stop == "" {
				stop = "end_turn"
			}
			return map[string]any{"stopReason": stop}, nil
		}
		if req.IsNotification() {
			return nil, nil
		}
		return nil, jsonrpc.Errorf(jsonrpc.MethodNotFound, "method not found: %s", req.Method)
	}
	conn = jsonrpc.NewConn(deafReader{&deaf}, &lockedWriter{w: out, mu: &mu}, jsonrpc.Options{})
	conn.Serve(context.Background(), handler)
	if os.Getenv(envFakeLinger) != "" {
		fakeLog("linger", nil, "stdin closed")
		for {
			// The subject: an agent that outlives its stdin, as codex-acp
			// does, until it is signalled. A sleep, not select{}, so that
			// the runtime does not call it a deadlock.
			time.Sleep(time.Hour)
		}
	}
	return 0
}

// waitFile returns once path exists. The test, another process, creates
// it; there is nothing to wait on but the file system, so it polls (the
// harness kills the fake when the test ends).
func waitFile(path string) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// deafFlood is how many requests a deaf fake sends after it stops reading:
// their replies (about 200 bytes each) are far more than a pipe buffers.
const deafFlood = 2000

// deafReader reads stdin until deaf is set, then never returns: an agent
// that has stopped reading its input. It sleeps rather than blocking on a
// channel so that the runtime does not report a deadlock.
type deafReader struct{ deaf *atomic.Bool }

func (r deafReader) Read(p []byte) (int, error) {
	for r.deaf.Load() {
		time.Sleep(time.Hour)
	}
	return os.Stdin.Read(p)
}

type lockedWriter struct {
	w  *os.File
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
