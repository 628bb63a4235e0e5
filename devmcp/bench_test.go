package devmcp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/testexe"
)

// lineClient is the plainest MCP client: write a request line, read lines
// until the reply with the same id. No schema validation, so the server's
// cost dominates.
type lineClient struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func newLineClient(b *testing.B, dir string, name string, args ...string) *lineClient {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+b.TempDir(), "BUZZ_DEV_MCP_LOG=warn")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &lineClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	c.roundTrip(b, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}`)
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return c
}

// roundTrip sends one request and returns the raw reply line.
func (c *lineClient) roundTrip(b *testing.B, method, params string) []byte {
	c.id++
	fmt.Fprintf(c.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.id, method, params)
	// The id may be followed by another member or end the object.
	want1, want2 := fmt.Sprintf(`"id":%d,`, c.id), fmt.Sprintf(`"id":%d}`, c.id)
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			b.Fatalf("%s: %v", method, err)
		}
		if s := string(line); strings.Contains(s, want1) || strings.Contains(s, want2) {
			return line
		}
	}
}

func hundredKB(b *testing.B) (dir, path string) {
	dir = b.TempDir()
	var sb strings.Builder
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	path = filepath.Join(dir, "file.txt")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir, path
}

// BenchmarkReadFile100KB compares one read_file round trip of a 100 KB file
// with server-filesystem's read_text_file of the same file, measured in the
// same run with the same line client.
func BenchmarkReadFile100KB(b *testing.B) {
	dir, path := hundredKB(b)
	b.Run("buzz-dev-mcp", func(b *testing.B) {
		c := newLineClient(b, dir, testexe.Link(b, "buzz-dev-mcp"))
		params := fmt.Sprintf(`{"name":"read_file","arguments":{"path":%q,"limit":100000}}`, path)
		if r := c.roundTrip(b, "tools/call", params); !strings.Contains(string(r), "1:line 0:") {
			b.Fatalf("reply %.200s", r)
		}
		b.SetBytes(100_000)
		b.ResetTimer()
		cpu := cpuTime(b, c.cmd.Process.Pid)
		for b.Loop() {
			c.roundTrip(b, "tools/call", params)
		}
		reportCPU(b, c.cmd.Process.Pid, cpu)
	})
	b.Run("server-filesystem", func(b *testing.B) {
		nm, node := testexe.NodeModules(b)
		c := newLineClient(b, dir, node, filepath.Join(nm, "@modelcontextprotocol", "server-filesystem", "dist", "index.js"), dir)
		params := fmt.Sprintf(`{"name":"read_text_file","arguments":{"path":%q}}`, path)
		if r := c.roundTrip(b, "tools/call", params); !strings.Contains(string(r), "line 0:") {
			b.Fatalf("reply %.200s", r)
		}
		b.SetBytes(100_000)
		b.ResetTimer()
		cpu := cpuTime(b, c.cmd.Process.Pid)
		for b.Loop() {
			c.roundTrip(b, "tools/call", params)
		}
		reportCPU(b, c.cmd.Process.Pid, cpu)
	})
}

// cpuTime returns the user+system CPU time a process has used, in clock
// ticks (1/100 s on Linux), from /proc/<pid>/stat. Server CPU per request
// is a fairer comparison than wall time on a loaded machine.
func cpuTime(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ut, st int64
	fmt.Sscan(f[11], &ut) // field 14 utime
	fmt.Sscan(f[12], &st) // field 15 stime
	return ut + st
}

// reportCPU reports the server's CPU time per operation since start.
func reportCPU(b *testing.B, pid int, start int64) {
	if end := cpuTime(b, pid); start >= 0 && end >= 0 && b.N > 0 {
		b.ReportMetric(float64(end-start)*10_000/float64(b.N), "server-cpu-µs/op")
	}
}

// BenchmarkShellTrue is one shell call running `true`, round trip; compare
// with BenchmarkBashTrue for the overhead the server adds.
func BenchmarkShellTrue(b *testing.B) {
	c := newLineClient(b, b.TempDir(), testexe.Link(b, "buzz-dev-mcp"))
	params := `{"name":"shell","arguments":{"command":"true"}}`
	var res struct {
		Result struct {
			StructuredContent struct {
				ExitCode int `json:"exit_code"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(c.roundTrip(b, "tools/call", params), &res); err != nil || res.Result.StructuredContent.ExitCode != 0 {
		b.Fatalf("shell true: %v %+v", err, res)
	}
	for b.Loop() {
		c.roundTrip(b, "tools/call", params)
	}
}

// BenchmarkBashTrue is a bare `bash -c true` spawn and wait.
func BenchmarkBashTrue(b *testing.B) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Skip("SKIP(loud): bash not installed")
	}
	for b.Loop() {
		if err := exec.Command(bash, "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShell1GiBOutput runs a command printing 1 GiB to stdout through
// a fresh server and reports the server's peak resident set size (VmHWM)
// as peak-RSS-MiB. Run with -benchtime 1x.
func BenchmarkShell1GiBOutput(b *testing.B) {
	testexe.Path(b) // build outside the timed loop
	for b.Loop() {
		c := newLineClient(b, b.TempDir(), testexe.Link(b, "buzz-dev-mcp"))
		r := c.roundTrip(b, "tools/call", `{"name":"shell","arguments":{"command":"head -c 1073741824 /dev/zero","timeout_ms":600000}}`)
		var res struct {
			Result struct {
				StructuredContent struct {
					StdoutArtifact string `json:"stdout_artifact"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(r, &res); err != nil || res.Result.StructuredContent.StdoutArtifact == "" {
			b.Fatalf("reply %.300s: %v", r, err)
		}
		os.Remove(res.Result.StructuredContent.StdoutArtifact)
		b.ReportMetric(float64(peakRSS(b, c.cmd.Process.Pid))/(1<<20), "peak-RSS-MiB")
	}
	b.SetBytes(1 << 30)
}
