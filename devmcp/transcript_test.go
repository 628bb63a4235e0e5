package devmcp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestTranscripts replays testdata/transcripts/*.txt against the built
// binary: "->" lines are sent, and each "<-" line must equal the next reply
// (by id, or the next id-null error), where "$ANY" matches any value and
// "$DIR" stands for the server's working directory.
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txt"))
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "hello.txt"), "hello <world> & \"you\"\nbye\n")
			p := startServer(t, startOpts{dir: dir})
			var lastID any
			for n, line := range strings.Split(string(data), "\n") {
				switch {
				case strings.HasPrefix(line, "-> "):
					msg := strings.TrimPrefix(line, "-> ")
					var m map[string]any
					lastID = nil
					if json.Unmarshal([]byte(msg), &m) == nil {
						lastID = m["id"]
					}
					p.sendLine(msg)
				case strings.HasPrefix(line, "<- "):
					var want any
					if err := json.Unmarshal([]byte(strings.ReplaceAll(strings.TrimPrefix(line, "<- "), "$DIR", dir)), &want); err != nil {
						t.Fatalf("line %d: bad expectation: %v", n+1, err)
					}
					got := p.replyTo(lastID, want)
					if !matchJSON(got, want) {
						gb, _ := json.Marshal(got)
						t.Errorf("line %d: reply\n%s\nwant\n%s", n+1, gb, strings.TrimPrefix(line, "<- "))
					}
				}
			}
		})
	}
}

// replyTo waits for the reply with the given id; for an id-null reply (a
// request that could not be read) it takes the oldest unclaimed one.
func (p *mcpProc) replyTo(id any, want any) map[string]any {
	p.t.Helper()
	if wm, _ := want.(map[string]any); wm != nil && wm["id"] == nil {
		m := p.waitNote("an id-null reply", func(m map[string]any) bool { _, ok := m["error"]; return ok && m["id"] == nil })
		p.mu.Lock()
		p.nullIDs = p.nullIDs[1:]
		p.mu.Unlock()
		return m
	}
	key := strings.TrimSuffix(strings.TrimPrefix(mustJSON(id), `"`), `"`)
	ch := make(chan map[string]any, 1)
	p.mu.Lock()
	if m, ok := p.early[key]; ok {
		delete(p.early, key)
		ch <- m
	} else {
		p.waiters[key] = ch
	}
	p.mu.Unlock()
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		p.t.Fatalf("no reply to id %v", id)
	}
	return nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// matchJSON compares decoded JSON values; "$ANY" in want matches anything.
func matchJSON(got, want any) bool {
	if want == "$ANY" {
		return true
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !matchJSON(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !matchJSON(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}
