package devmcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"buzzbox/internal/leakcheck"
	"buzzbox/internal/proc"
)

// TestConcurrentCallsInProcess serves over pipes in this process (so the
// race detector sees the server's goroutines): shell calls that spill to
// artifacts, file edits and todo writes run concurrently, one shell call is
// cancelled, and the server shuts down cleanly at EOF.
func TestConcurrentCallsInProcess(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("SKIP(loud): no /bin/sh")
	}
	leakcheck.Check(t)
	dir := t.TempDir()
	os.WriteFile(dir+"/f.txt", []byte("a\nb\nc\n"), 0o644)
	env := proc.Env{Dir: dir, Environ: []string{"TMPDIR=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}}
	s, err := newServer(env, slog.New(slog.NewTextHandler(t.Output(), nil)), options{readerJoin: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- s.serve(context.Background(), inR, outW); outW.Close() }()

	const want = 1 + 6*3 // initialize, then three calls per goroutine; the cancelled one gets none
	var mu sync.Mutex
	replies := map[string]map[string]any{}
	allIn := make(chan struct{})
	readDone := make(chan struct{})
	go func() { // ends when the server closes its output
		defer close(readDone)
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["id"] != nil {
				mu.Lock()
				replies[fmt.Sprint(m["id"])] = m
				if len(replies) == want {
					close(allIn)
				}
				mu.Unlock()
			}
		}
	}()
	var wmu sync.Mutex
	send := func(line string) {
		wmu.Lock()
		defer wmu.Unlock()
		io.WriteString(inW, line+"\n")
	}
	send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"sh%d","method":"tools/call","params":{"name":"shell","arguments":{"command":"seq 20000; echo e >&2"}}}`, i))
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"todo%d","method":"tools/call","params":{"name":"todo","arguments":{"todos":[{"text":"t%d"}]}}}`, i, i))
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"rd%d","method":"tools/call","params":{"name":"read_file","arguments":{"path":"f.txt"}}}`, i))
		}()
	}
	send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 100"},"_meta":{"progressToken":1}}}`)
	wg.Wait()
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long"}}`)
	select {
	case <-allIn:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("got %d replies; want %d", len(replies), want)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	<-readDone
	s.close()
	mu.Lock()
	defer mu.Unlock()
	if _, ok := replies["long"]; ok {
		t.Errorf("cancelled call got a reply")
	}
	for i := range 6 {
		r := replies[fmt.Sprintf("sh%d", i)]
		res, _ := r["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if sc["stdout_truncated"] != true || !strings.HasPrefix(fmt.Sprint(sc["stdout"]), "[truncated:") {
			t.Errorf("sh%d = %v", i, r)
		}
	}
	if _, err := os.Stat(s.sess.dir); !os.IsNotExist(err) {
		t.Errorf("session dir left behind: %v", err)
	}
}
