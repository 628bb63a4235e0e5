package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/workspace"
	"buzzbox/relay"

	"github.com/nbd-wtf/go-nostr"
)

// BenchmarkSendProcess times `buzz messages send` from process start to
// exit against buzz-relay on loopback (HTTP bridge with NIP-98), and
// reports the median wall time and the median CPU time (user+system) of
// the process; the latter is what wall time approaches on an idle machine.
func BenchmarkSendProcess(b *testing.B) {
	me := newKey(b)
	r, err := relay.Start(relay.Config{DataDir: b.TempDir(), Owner: me.pk}, "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	exe := buzzExe(b)
	env := []string{"BUZZ_RELAY_URL=" + r.HTTPURL(), "BUZZ_PRIVATE_KEY=" + me.sk}
	cmd := exec.Command(exe, "channels", "create", "--name", "bench", "--type", "stream", "--visibility", "open")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("create channel: %v %s", err, out)
	}
	ch := strings.Split(strings.Split(string(out), `"channel_id":"`)[1], `"`)[0]
	var times, cpu []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		cmd := exec.Command(exe, "messages", "send", "--channel", ch, "--content", fmt.Sprintf("message %d", i))
		cmd.Env = env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("send: %v %s", err, out)
		}
		times = append(times, time.Since(start))
		cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	slices.Sort(times)
	slices.Sort(cpu)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds())/1000, "cpu-ms-median")
}

// BenchmarkListProcess streams a 10 000-message channel with `buzz
// messages list` and reports the process's peak RSS. The peak comes from
// GNU time, which forks (not vfork) before exec: a child spawned straight
// from this large test process would inherit its high-water mark.
func BenchmarkListProcess(b *testing.B) {
	const n = 10000
	gnuTime, err := exec.LookPath("time")
	if err != nil {
		b.Skip("SKIP(loud): GNU time is not installed (apt-get install time); it measures the child's peak RSS")
	}
	me := newKey(b)
	rl := startPlainRelay(b, false)
	base := time.Now().Unix() - n
	for i := range n {
		rl.put(b, signed(b, me, workspace.KindStream, fmt.Sprintf("message %d %s", i, strings.Repeat("x", 200)), nostr.Tags{{"h", testChannel}}, base+int64(i/3)))
	}
	exe := buzzExe(b)
	rss := filepath.Join(b.TempDir(), "rss")
	var peak int64
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(gnuTime, "-f", "%M", "-o", rss, exe, "messages", "list", "--channel", testChannel)
		cmd.Env = []string{"BUZZ_RELAY_URL=" + rl.base, "BUZZ_PRIVATE_KEY=" + me.sk}
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			b.Fatalf("list: %v", err)
		}
		if got := bytes.Count(out.Bytes(), []byte(`"kind":9`)); got != n {
			b.Fatalf("listed %d events; want %d", got, n)
		}
		kb, err := os.ReadFile(rss)
		if err != nil {
			b.Fatal(err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(kb)), 10, 64)
		if err != nil {
			b.Fatalf("GNU time wrote %q", kb)
		}
		peak = max(peak, v)
	}
	b.ReportMetric(float64(peak)/1024, "MiB-peak-rss")
}
