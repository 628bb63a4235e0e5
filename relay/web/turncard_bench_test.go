package web_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/nostrkey"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
)

// turnBenchMentions is how many mentions BenchmarkTurnCard sends, one
// turn at a time: enough for a p99 that means something; under -short
// (the test command runs every benchmark once) shortTurnBenchMentions.
const turnBenchMentions, shortTurnBenchMentions = 100, 10

// cardScript records, in the page, when each message's turn card first
// shows and when it first shows a step (wall-clock milliseconds, which
// the benchmark's process shares).
const cardScript = `(() => {
  window.__card = new Map(); window.__step = new Map();
  const note = () => {
    const now = performance.timeOrigin + performance.now();
    for (const c of document.querySelectorAll('#feed article .turn-card')) {
      const id = c.closest('article').dataset.id;
      if (!window.__card.has(id)) window.__card.set(id, now);
      if (c.querySelector('.turn-step') && !window.__step.has(id)) window.__step.set(id, now);
    }
  };
  new MutationObserver(note).observe(document.body, { childList: true, subtree: true, attributes: true, characterData: true });
  return true;
})()`

// BenchmarkTurnCard measures the turn card as the owner sees it in a
// browser, against the built `buzzbox up` (relay, harness, buzz-agent,
// a scripted model): a mention posted by another client of the owner's →
// the message's card showing (seen, or working when the idle agent takes
// it at once), and the model's answer that starts a tool call → the
// card showing the call as its step. p50 and p99 over turnBenchMentions
// turns. Goals: card p99 ≤ 200 ms, step p99 ≤ 100 ms. Run with
// -benchtime=1x.
func BenchmarkTurnCard(b *testing.B) {
	stamp := regexp.MustCompile(`bench-\d+-x`)
	var mu sync.Mutex
	toolAt := map[string]time.Time{} // stamp → when the model answered with the tool call
	model := llmtest.New(b)
	model.SetHandler(func(req map[string]any) llmtest.Reply {
		last := lastMessage(req)
		if s := stamp.FindString(string(last)); s != "" && !strings.Contains(string(last), `"tool"`) {
			args, _ := json.Marshal(map[string]any{"command": "sleep 0.3"}) // long enough for the step to be drawn before done
			mu.Lock()
			toolAt[s] = time.Now()
			mu.Unlock()
			return llmtest.Reply{Calls: []llmtest.Call{{ID: "call_1", Name: "buzz-dev-mcp__shell", Args: string(args)}}}
		}
		return llmtest.Reply{Text: "ok"}
	})
	w := startUp(b, model)
	ctx, _ := browser(b)
	openURL(b, ctx, "open the sign-in link", w.link)
	waitJS(b, ctx, "signed in as the owner", `document.getElementById('status').dataset.state === 'authenticated'`)
	do(b, ctx, "open #general", chromedp.Evaluate[chromedp.Void](`location.hash = '#/c/`+w.channel+`'`))
	waitJS(b, ctx, "the channel view", textIn("#channel-name", "general"))
	do(b, ctx, "record the cards", chromedp.Evaluate[chromedp.Void](cardScript))
	frames := watchStatusFrames(ctx)

	keys, _ := filepath.Glob(filepath.Join(w.home, "state", "buzzbox", "*", "owner.key"))
	agents, _ := filepath.Glob(filepath.Join(w.home, "state", "buzzbox", "*", "agent.key"))
	if len(keys) != 1 || len(agents) != 1 {
		b.Fatalf("state dir holds owner keys %v and agent keys %v", keys, agents)
	}
	owner, err := nostrkey.ReadFile(keys[0], nostrkey.FileRules{})
	if err != nil {
		b.Fatal(err)
	}
	agent, err := nostrkey.ReadFile(agents[0], nostrkey.FileRules{})
	if err != nil {
		b.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rel, err := nostr.RelayConnect(rctx, "ws://"+w.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer rel.Close()
	sk, _ := owner.AppendHex(nil)
	time.Sleep(300 * time.Millisecond) // the AUTH challenge arrives
	if err := rel.Auth(rctx, func(ev *nostr.Event) error { return ev.Sign(string(sk)) }); err != nil {
		b.Fatalf("auth as the owner: %v", err)
	}
	mentions := turnBenchMentions
	if testing.Short() {
		mentions = shortTurnBenchMentions
	}
	sent := map[string]time.Time{} // message id → publish start
	ids := map[string]string{}     // message id → stamp
	b.ResetTimer()
	for i := range mentions {
		s := "bench-" + strconv.Itoa(i) + "-x"
		ev := nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Content: "run a tool " + s,
			Tags: nostr.Tags{{"h", w.channel}, {"p", agent.Public().Hex()}}}
		if err := ev.Sign(string(sk)); err != nil {
			b.Fatal(err)
		}
		sent[ev.ID], ids[ev.ID] = time.Now(), s
		if err := rel.Publish(rctx, ev); err != nil {
			b.Fatalf("publish: %v", err)
		}
		// One turn at a time: the next mention goes once this one is done.
		waitJS(b, ctx, "turn "+s+" done", `(() => { const a = document.querySelector('#feed article[data-id="`+ev.ID+`"]'); return !!a && !!a.querySelector('.turn-card[data-state=done]'); })()`)
	}
	b.StopTimer()
	var cards, steps map[string]float64
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`window.__c = Object.fromEntries(window.__card); window.__s = Object.fromEntries(window.__step)`)); err != nil {
		b.Fatal(err)
	}
	cards, _ = chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`window.__c`))
	steps, _ = chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`window.__s`))
	var cardMs, stepMs []float64
	mu.Lock()
	for id, t0 := range sent {
		if at, ok := cards[id]; ok {
			cardMs = append(cardMs, at-float64(t0.UnixNano())/1e6)
		}
		if at, ok := steps[id]; ok {
			if tool, ok := toolAt[ids[id]]; ok {
				stepMs = append(stepMs, at-float64(tool.UnixNano())/1e6)
			}
		}
	}
	mu.Unlock()
	for id := range sent {
		if _, ok := steps[id]; !ok {
			var got []string
			for _, f := range frames.of(id) {
				got = append(got, f.State+":"+f.Step+"@"+f.at.Format("05.000"))
			}
			b.Logf("no step drawn for %s; received %v; tool at %s", ids[id], got, toolAt[ids[id]].Format("05.000"))
		}
	}
	if len(cardMs) != mentions || len(stepMs) != mentions {
		b.Fatalf("cards seen for %d and steps for %d of %d turns", len(cardMs), len(stepMs), mentions)
	}
	slices.Sort(cardMs)
	slices.Sort(stepMs)
	b.ReportMetric(quantile(cardMs, 0.5), "card-ms-p50")
	b.ReportMetric(quantile(cardMs, 0.99), "card-ms-p99")
	b.ReportMetric(quantile(stepMs, 0.5), "step-ms-p50")
	b.ReportMetric(quantile(stepMs, 0.99), "step-ms-p99")
}
