package devmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"buzzbox/internal/mcp"
)

type strReplaceArgs struct {
	Path       *string `json:"path"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	ReplaceAll *bool   `json:"replace_all"`
	Workdir    *string `json:"workdir"`
}

// strReplace is the str_replace tool: replace old_str by new_str in one
// file, atomically, answering with a unified diff. An empty old_str on a
// path that does not exist creates the file.
func (s *Server) strReplace(_ context.Context, _ *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a strReplaceArgs
	if err := decodeArgs(raw, &a, false); err != nil {
		return nil, err
	}
	switch {
	case a.Path == nil:
		return nil, missing("path")
	case a.OldStr == nil:
		return nil, missing("old_str")
	case a.NewStr == nil:
		return nil, missing("new_str")
	}
	oldStr, newStr := *a.OldStr, *a.NewStr
	replaceAll := a.ReplaceAll != nil && *a.ReplaceAll
	root := s.root(a.Workdir)
	if len(oldStr) > maxEditArgBytes {
		return nil, toolErrorf("old_str is %d bytes, over the %d byte limit; replace a smaller unique part", len(oldStr), maxEditArgBytes)
	}
	if len(newStr) > maxEditArgBytes {
		return nil, toolErrorf("new_str is %d bytes, over the %d byte limit; make the change in several smaller edits", len(newStr), maxEditArgBytes)
	}
	if oldStr == "" {
		return createFile(root, *a.Path, newStr, s.fence)
	}

	f, err := loadText(root, *a.Path, s.fence, true)
	if err != nil {
		var te *toolError
		if errors.As(err, &te) && strings.HasPrefix(te.msg, "path not accessible") {
			te.msg += "; to create a new file pass an empty old_str"
		}
		return nil, err
	}
	defer f.dir.close()
	content := string(f.content)
	limit := 2
	if replaceAll {
		limit = -1
	}
	matches := findAll(content, oldStr, limit)
	switch {
	case len(matches) == 0:
		msg := fmt.Sprintf("old_str not found in %s.\nold_str (truncated): %s", f.path, quoteHead(oldStr, quoteOldStrChars))
		if hint := nearestLineHint(content, oldStr); hint != "" {
			msg += "\n" + hint
		}
		return nil, &toolError{msg: msg}
	case len(matches) > 1 && !replaceAll:
		return nil, toolErrorf("old_str matched multiple locations in %s; provide more surrounding context to make the match unique (or set replace_all to replace every occurrence)", f.path)
	}
	projected := int64(len(content)) + int64(len(newStr)-len(oldStr))*int64(len(matches))
	if projected < 0 || projected > maxTextFileBytes {
		return nil, toolErrorf("result would exceed %d byte limit (%d bytes projected)", maxTextFileBytes, projected)
	}
	updated := replaceAt(content, matches, len(oldStr), newStr)
	if err := atomicWrite(f.dir, f.name, []byte(updated), f.info); err != nil {
		return nil, toolErrorf("failed to write %s: %s", f.path, causeOf(err))
	}
	var head string
	if len(matches) == 1 {
		head = fmt.Sprintf("Replaced 1 occurrence in %s.", f.path)
	} else {
		head = fmt.Sprintf("Replaced %d occurrence(s) in %s.", len(matches), f.path)
	}
	diff := unifiedDiff(f.path, content, updated, editRegions(content, matches, len(oldStr), len(newStr)))
	return textResult(head + "\n\n" + diff), nil
}

// createFile makes a new file holding text. The parent directory must exist
// and nothing may be at the path yet, not even a dangling symlink.
func createFile(root, p, text string, fc *fence) (*mcp.CallToolResult, error) {
	cand := p
	if !filepath.IsAbs(cand) {
		cand = filepath.Join(root, cand)
	}
	if _, err := os.Lstat(cand); err == nil {
		return nil, toolErrorf("old_str must not be empty: %s already exists; quote the text to replace (read_file shows it), or use a new path to create a file", cand)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, toolErrorf("path not accessible: %s (%s)", cand, causeOf(err))
	}
	d, name, err := openParentChecked(root, p, fc)
	if err != nil {
		return nil, err
	}
	defer d.close()
	path := d.join(name)
	// O_EXCL: never clobber a file (or follow a symlink) that appeared
	// since the check above.
	fh, err := d.open(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrExist) {
		return nil, toolErrorf("old_str must not be empty: %s already exists; quote the text to replace (read_file shows it), or use a new path to create a file", path)
	}
	if err != nil {
		return nil, toolErrorf("cannot create %s: %s", path, causeOf(err))
	}
	_, werr := fh.WriteString(text)
	cerr := fh.Close()
	if werr != nil || cerr != nil {
		d.remove(name)
		return nil, toolErrorf("failed to write %s: %s", path, causeOf(errors.Join(werr, cerr)))
	}
	var regions []region
	if text != "" {
		regions = []region{{oldStart: 0, oldEnd: 0, newStart: 0, newEnd: len(text)}}
	}
	head := fmt.Sprintf("Created %s (%d bytes).", path, len(text))
	return textResult(head + "\n\n" + unifiedDiff(path, "", text, regions)), nil
}

// findAll returns the offsets of non-overlapping occurrences of sub in s,
// left to right, stopping after limit matches when limit > 0.
func findAll(s, sub string, limit int) []int {
	var out []int
	for i := 0; limit < 0 || len(out) < limit; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			break
		}
		out = append(out, i+j)
		i += j + len(sub)
	}
	return out
}

// replaceAt replaces the oldLen bytes at each offset in matches by repl.
func replaceAt(s string, matches []int, oldLen int, repl string) string {
	var b strings.Builder
	b.Grow(len(s) + (len(repl)-oldLen)*len(matches))
	prev := 0
	for _, m := range matches {
		b.WriteString(s[prev:m])
		b.WriteString(repl)
		prev = m + oldLen
	}
	b.WriteString(s[prev:])
	return b.String()
}

// quoteHead quotes the first n characters of s, with an ellipsis inside the
// quotes when s is longer.
func quoteHead(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		i, k := 0, 0
		for k < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			k++
		}
		s = s[:i] + "…"
	}
	return strconv.Quote(s)
}

// atomicWrite replaces the content of the entry name in d by writing a
// temporary file in d and renaming it over name there, so a reader never
// sees half a file and nothing is written outside d. The old file's
// permission bits (and, when allowed, its owner) are copied to the new one
// before the rename, since a fresh temp file has mode 0600.
func atomicWrite(d *heldDir, name string, data []byte, old fs.FileInfo) error {
	tmp, tmpName, err := d.createTemp("." + name + ".buzz-tmp-")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			d.remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if old != nil {
		copyOwner(tmp, old)
		// After Chown, which clears set-id bits.
		if err := tmp.Chmod(old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := d.rename(tmpName, name); err != nil {
		return err
	}
	done = true
	return nil
}
