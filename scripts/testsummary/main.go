// Command testsummary reads `go test -json` on stdin and writes what a
// person wants from a long run: each package's result line as it ends,
// the whole output of every failing test, every loud skip (a SKIP(loud)
// line: a prerequisite was missing), and at the end the skip list and one
// count line, "N passed, N failed, N skipped". It exits 1 when any test or
// package failed, or when the input ends before go test's did.
//
// scripts/test.sh runs it; it is not part of buzzbox.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// maxLineBytes bounds one line of go test -json; a test that prints a
// longer line has it cut.
const maxLineBytes = 4 << 20

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	r := bufio.NewReaderSize(in, 64<<10)
	output := map[string]*strings.Builder{} // package + test → its output so far
	loud := map[string]bool{}
	var passed, failed, skipped int
	var failedNames []string
	pkgFailed := false
	for {
		line, err := readLine(r)
		if len(line) > 0 {
			var ev event
			if json.Unmarshal(line, &ev) != nil {
				fmt.Fprintf(out, "%s\n", line) // build errors and the like come as text
			} else {
				key := ev.Package + " " + ev.Test
				switch ev.Action {
				case "output":
					if strings.Contains(ev.Output, "SKIP(loud)") {
						loud[strings.TrimSpace(ev.Output)+" ("+ev.Package+")"] = true
					}
					if ev.Test == "" {
						if !strings.HasPrefix(ev.Output, "=== ") && !strings.HasPrefix(ev.Output, "PASS\n") {
							fmt.Fprint(out, ev.Output)
						}
						break
					}
					b := output[key]
					if b == nil {
						b = new(strings.Builder)
						output[key] = b
					}
					b.WriteString(ev.Output)
				case "pass", "fail", "skip":
					if ev.Test == "" {
						if ev.Action == "fail" {
							pkgFailed = true
							flushPackage(out, output, ev.Package)
						}
						break
					}
					switch ev.Action {
					case "pass":
						passed++
					case "skip":
						skipped++
					case "fail":
						failed++
						failedNames = append(failedNames, ev.Package+"."+ev.Test)
						if b := output[key]; b != nil {
							fmt.Fprint(out, b.String())
						}
					}
					delete(output, key)
				}
			}
		}
		if err != nil {
			break
		}
	}
	if len(loud) > 0 {
		fmt.Fprintln(out, "\nskipped for a missing prerequisite:")
		lines := make([]string, 0, len(loud))
		for l := range loud {
			lines = append(lines, l)
		}
		sort.Strings(lines)
		for _, l := range lines {
			fmt.Fprintln(out, "  "+l)
		}
	}
	if len(failedNames) > 0 {
		fmt.Fprintln(out, "\nfailed:")
		for _, n := range failedNames {
			fmt.Fprintln(out, "  "+n)
		}
	}
	fmt.Fprintf(out, "\n%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if failed > 0 || pkgFailed {
		return 1
	}
	return 0
}

// flushPackage prints the output of pkg's tests that never ended: a panic
// or a timeout ended the package under them.
func flushPackage(out io.Writer, output map[string]*strings.Builder, pkg string) {
	var keys []string
	for k := range output {
		if strings.HasPrefix(k, pkg+" ") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprint(out, output[k].String())
		delete(output, k)
	}
}

// readLine returns the next line without its newline, cut at maxLineBytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if len(line)+len(chunk) <= maxLineBytes {
			line = append(line, chunk...)
		}
		if err != nil || !isPrefix {
			return line, err
		}
	}
}
