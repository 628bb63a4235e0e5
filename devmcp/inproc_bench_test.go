package devmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/jsonrpc"
	"buzzbox/internal/proc"
)

// BenchmarkReadFileHandler is read_file's cost inside the server, from the
// decoded request to the encoded reply, without process or pipe costs.
func BenchmarkReadFileHandler(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	path := filepath.Join(dir, "file.txt")
	os.WriteFile(path, []byte(sb.String()), 0o644)
	s, err := newServer(proc.Env{Dir: dir, Environ: []string{"TMPDIR=" + b.TempDir(), "PATH=" + os.Getenv("PATH")}}, slog.New(slog.DiscardHandler), options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	s.conn = jsonrpc.NewConn(strings.NewReader(""), io.Discard, jsonrpc.Options{})
	req := &jsonrpc.Request{ID: json.RawMessage("1"), Method: "tools/call",
		Params: json.RawMessage(fmt.Sprintf(`{"name":"read_file","arguments":{"path":%q,"limit":100000}}`, path))}
	b.SetBytes(100_000)
	for b.Loop() {
		res, err := s.handle(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := res.(jsonrpc.Encoded); !ok { // the core frames it as is
			b.Fatalf("result is %T", res)
		}
	}
}
