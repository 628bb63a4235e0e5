package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"buzzbox/agent/llm"
	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/testexe"
)

// BenchmarkRoundLoopback measures one full agent round against the
// loopback fake LLM: streamed HTTP call, parsing, ACP updates, a
// synthesized tool result and history bookkeeping. Compare with
// BenchmarkLLMRoundTripLoopback, the bare HTTP round trip of the same
// request; the difference is the loop's own overhead per round.
func BenchmarkRoundLoopback(b *testing.B) {
	const roundsPerPrompt = 50
	srv := llmtest.New(b)
	srv.SetFallback(llmtest.Reply{Calls: []llmtest.Call{{ID: "c", Name: "no__tool"}}})
	srv.DropBodies()
	c := startAgent(b, srv, fmt.Sprintf("BUZZ_AGENT_MAX_ROUNDS=%d", roundsPerPrompt))
	// Drains frames so the agent never blocks on stdout; ends at its exit.
	go c.drainRouted()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	done := 0
	for done < b.N {
		sid := newSessionRaw(c)
		promptRaw(c, sid)
		done += roundsPerPrompt
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/round")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(done), "cpu-ns/round")
}

// cpuTime is this process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkLLMRoundTripLoopback is the HTTP baseline for
// BenchmarkRoundLoopback: the same kind of request (a history of about 25
// tool rounds), streamed, parsed, without the agent around it.
func BenchmarkLLMRoundTripLoopback(b *testing.B) {
	srv := llmtest.New(b)
	srv.SetFallback(llmtest.Reply{Calls: []llmtest.Call{{ID: "c", Name: "no__tool"}}})
	srv.DropBodies()
	client := llm.New(llm.Config{Provider: llm.OpenAI, API: llm.APIChat, BaseURL: srv.URL, APIKey: "k", MaxOutputTokens: 100})
	defer client.Close()
	hist := []llm.Message{llm.User("go")}
	for i := 0; i < 25; i++ {
		call := llm.ToolCall{ID: fmt.Sprint("c", i), Name: "no__tool", Args: json.RawMessage("{}")}
		hist = append(hist, llm.Message{Role: llm.RoleAssistant, Calls: []llm.ToolCall{call}}, call.Result([]llm.Part{{Text: "unknown tool: no__tool" + reflectSuffix}}, true))
	}
	req := &llm.Request{Model: "m", System: defaultSystemPrompt, Messages: hist}
	b.ReportAllocs()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		n++
		if _, err := client.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n), "cpu-ns/round")
}

// newSessionRaw and promptRaw drive the agent while another goroutine
// drains frames: they write requests and wait on the LLM side instead.
func newSessionRaw(c *client) string {
	c.t.Helper()
	id := c.request("session/new", map[string]any{"cwd": "/", "mcpServers": []any{}})
	return awaitResult(c, id)["sessionId"].(string)
}

func promptRaw(c *client, sid string) {
	id := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "go"}}})
	awaitResult(c, id)
}

// awaitResult waits for a reply routed by the bench's frame router.
func awaitResult(c *client, id int) map[string]any {
	ch := c.route(id)
	select {
	case f := <-ch:
		if f.Error != nil {
			c.t.Fatalf("request %d: %s", id, f.Error.Message)
		}
		var m map[string]any
		json.Unmarshal(f.Result, &m)
		return m
	case <-time.After(60 * time.Second):
		c.t.Fatalf("no reply to %d", id)
		return nil
	}
}

// agentProcess is the built buzz-agent driven over pipes, replies routed
// by id so many prompts can run at once.
type agentProcess struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	mu     sync.Mutex
	nextID int
	wait   map[int]chan frame
	done   chan struct{}
}

func startAgentProcess(b *testing.B, srv *llmtest.Server, overrides ...string) *agentProcess {
	cmd := exec.Command(testexe.Link(b, "buzz-agent"))
	cmd.Env = append(baseEnv(b, srv.URL), overrides...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &agentProcess{cmd: cmd, in: in, wait: map[int]chan frame{}, done: make(chan struct{})}
	// Ends at the agent's stdout EOF.
	go func() {
		defer close(p.done)
		br := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var f frame
			if json.Unmarshal(line, &f) != nil || f.Method != "" {
				continue
			}
			var id int
			json.Unmarshal(f.ID, &id)
			p.mu.Lock()
			ch := p.wait[id]
			delete(p.wait, id)
			p.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		}
	}()
	return p
}

func (p *agentProcess) call(b *testing.B, method string, params any) map[string]any {
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	ch := make(chan frame, 1)
	p.wait[id] = ch
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	_, err := p.in.Write(append(line, '\n'))
	p.mu.Unlock()
	if err != nil {
		b.Error(err)
		return nil
	}
	select {
	case f := <-ch:
		if f.Error != nil {
			b.Errorf("%s: %s", method, f.Error.Message)
			return nil
		}
		var m map[string]any
		json.Unmarshal(f.Result, &m)
		return m
	case <-time.After(5 * time.Minute):
		b.Errorf("%s: no reply", method)
		return nil
	}
}

// stop closes stdin and returns the agent's peak RSS in MiB.
func (p *agentProcess) stop(b *testing.B) float64 {
	p.in.Close()
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		b.Errorf("agent exit: %v", err)
	}
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}

// BenchmarkConcurrentSessions runs 100 sessions at once in the built
// buzz-agent, each a prompt of 10 rounds with 3 parallel tool calls to its
// own MCP server, and reports the agent's peak RSS (target ≤ 150 MB).
func BenchmarkConcurrentSessions(b *testing.B) {
	const sessions, rounds, parallel = 100, 10, 3
	srv := llmtest.New(b)
	srv.DropBodies()
	srv.SetHandler(func(req map[string]any) llmtest.Reply {
		msgs, _ := req["messages"].([]any)
		tools := 0
		for _, m := range msgs {
			if m.(map[string]any)["role"] == "tool" {
				tools++
			}
		}
		round := tools / parallel
		if round >= rounds {
			return llmtest.Reply{Text: "done", InputTokens: 100, OutputTokens: 5}
		}
		var calls []llmtest.Call
		for i := 0; i < parallel; i++ {
			calls = append(calls, llmtest.Call{ID: fmt.Sprintf("r%dc%d", round, i), Name: "fake__echo", Args: `{"text":"` + strings.Repeat("x", 200) + `"}`})
		}
		return llmtest.Reply{Text: "working", Calls: calls, InputTokens: 100, OutputTokens: 5}
	})
	var peak float64
	for b.Loop() {
		p := startAgentProcess(b, srv, "BUZZ_AGENT_MCP_INIT_TIMEOUT_SECS=60", "BUZZ_AGENT_MAX_ROUNDS=0")
		ids := make([]string, sessions)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := p.call(b, "session/new", map[string]any{"cwd": b.TempDir(), "mcpServers": []any{fakeServer(b, "fake")}})
				if res != nil {
					ids[i] = res["sessionId"].(string)
				}
			}()
		}
		wg.Wait()
		start := time.Now()
		for _, sid := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := p.call(b, "session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": "go"}}})
				if res != nil && res["stopReason"] != "end_turn" {
					b.Errorf("stop = %v", res["stopReason"])
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/100-sessions")
		peak = max(peak, p.stop(b))
	}
	b.ReportMetric(peak, "peak-RSS-MiB")
}
