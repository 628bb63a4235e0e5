package devmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"buzzbox/internal/mcp"
)

type readFileArgs struct {
	Path    *string `json:"path"`
	Offset  *int64  `json:"offset"`
	Limit   *int64  `json:"limit"`
	Workdir *string `json:"workdir"`
}

// readFile is the read_file tool: a window of numbered lines of a UTF-8 file.
func (s *Server) readFile(_ context.Context, _ *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a readFileArgs
	if err := decodeArgs(raw, &a, false); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("path")
	}
	if err := nonNegative("offset", a.Offset); err != nil {
		return nil, err
	}
	if err := nonNegative("limit", a.Limit); err != nil {
		return nil, err
	}
	offset, limit := int64(0), int64(defaultReadLimit)
	if a.Offset != nil {
		offset = *a.Offset
	}
	if a.Limit != nil {
		limit = *a.Limit
	}
	f, err := loadText(s.root(a.Workdir), *a.Path, s.fence, false)
	if err != nil {
		return nil, err
	}
	f.dir.close()
	return textResult(renderWindow(*a.Path, string(f.content), offset, limit)), nil
}

// renderWindow formats lines [offset, offset+limit) of content as read_file
// answers: a header, "<n>:<line>" lines numbered from 1, and a footer naming
// the offset of the next window when lines remain. label is the path as the
// caller wrote it.
func renderWindow(label, content string, offset, limit int64) string {
	lines := splitLines(content)
	total := int64(len(lines))
	if total == 0 {
		return fmt.Sprintf("%s is empty (0 lines)", label)
	}
	start := min(offset, total)
	end := start + min(limit, total-start)
	if end <= start {
		return fmt.Sprintf("%s (no lines in range, file has %d lines)", label, total)
	}
	var b strings.Builder
	b.Grow(len(content) + int(end-start)*8 + len(label) + 64)
	fmt.Fprintf(&b, "%s (lines %d-%d of %d)\n", label, start+1, end, total)
	var num [20]byte
	for i := start; i < end; i++ {
		b.Write(strconv.AppendInt(num[:0], i+1, 10))
		b.WriteByte(':')
		b.WriteString(lines[i])
		b.WriteByte('\n')
	}
	if end < total {
		fmt.Fprintf(&b, "[showing lines %d-%d of %d; use offset=%d to continue]\n", start+1, end, total, end)
	}
	return b.String()
}
