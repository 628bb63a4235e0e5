package devmcp

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// capture drains one output stream of a shell call with bounded memory.
//
// Output that stays within inlineMaxBytes and inlineMaxLines is kept in
// memory and returned whole. Past either bound the stream is spilled to an
// artifact file (everything so far, then the rest as it comes, up to
// maxArtifactBytes) and only the last tailBytes stay in memory, for the
// model. So memory per stream is bounded whatever the command prints.
type capture struct {
	label string // "stdout" or "stderr"
	dir   func() (*heldDir, error)

	head     []byte // the whole output while it fits inline; nil once spilled
	tail     tailRing
	total    int64 // bytes the command wrote
	captured int64 // bytes kept: in head or in the spill file
	lines    int64 // newlines among the kept bytes
	capped   bool  // captured reached maxArtifactBytes

	spilled  bool     // output outgrew inline: the model gets a tail
	spill    *os.File // the pending artifact while it is being written
	spillDir *heldDir // the dir it is in
	spillTmp string   // its name there
	spillErr error    // why the artifact could not be written
}

func newCapture(label string, dir func() (*heldDir, error)) *capture {
	return &capture{label: label, dir: dir}
}

// readFrom reads r until EOF or an error (such as the pipe being closed to
// abort the read) and records what it got.
func (c *capture) readFrom(r io.Reader) {
	buf := make([]byte, readChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.add(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (c *capture) add(p []byte) {
	c.total += int64(len(p))
	if room := maxArtifactBytes - c.captured; int64(len(p)) > room {
		p = p[:room]
		c.capped = true
	}
	if len(p) == 0 {
		return
	}
	c.captured += int64(len(p))
	c.lines += int64(bytes.Count(p, []byte{'\n'}))
	c.tail.write(p)
	switch {
	case c.spill != nil:
		if _, err := c.spill.Write(p); err != nil {
			c.dropSpill(err)
		}
	case c.spillErr != nil:
		// Counting only; the tail is all the model will see.
	case int64(len(c.head)+len(p)) <= inlineMaxBytes && c.lines <= inlineMaxLines:
		c.head = append(c.head, p...)
	default:
		c.startSpill(p)
	}
}

// startSpill opens the pending artifact and writes what was kept so far.
func (c *capture) startSpill(p []byte) {
	c.spilled = true
	dir, err := c.dir()
	if err == nil {
		c.spill, c.spillTmp, err = dir.createTemp(".pending-" + c.label + "-")
		c.spillDir = dir
	}
	if err != nil {
		c.spillErr = err
		c.head = nil
		return
	}
	if _, err := c.spill.Write(c.head); err != nil {
		c.dropSpill(err)
	} else if _, err := c.spill.Write(p); err != nil {
		c.dropSpill(err)
	}
	c.head = nil
}

func (c *capture) dropSpill(err error) {
	c.spillErr = err
	c.spill.Close()
	c.spillDir.remove(c.spillTmp)
	c.spill = nil
}

// truncated reports whether the model gets a tail rather than everything.
func (c *capture) truncated() bool { return c.spilled }

// discard removes a pending artifact; used when the call was cancelled.
func (c *capture) discard() {
	if c.spill != nil {
		c.spill.Close()
		c.spillDir.remove(c.spillTmp)
		c.spill = nil
	}
}

// finish turns the capture into the text for the model and, when the output
// was truncated, the final artifact path (empty when none could be kept).
// id is the call id used to name the artifact; notes collects problems.
func (c *capture) finish(s *session, id int, notes *[]string) (text, artifact string) {
	if !c.truncated() {
		return strings.ToValidUTF8(string(c.head), "\uFFFD"), ""
	}
	if c.spill != nil {
		err := c.spill.Close()
		c.spill = nil
		name := fmt.Sprintf("%06d.%s.txt", id, c.label)
		final := s.artifactPath(name)
		if err == nil {
			err = c.spillDir.rename(c.spillTmp, name)
		}
		if err != nil {
			c.spillDir.remove(c.spillTmp)
			*notes = append(*notes, fmt.Sprintf("%s: artifact write failed (%s): %v", c.label, final, err))
		} else {
			artifact = final
			s.keep(c.spillDir, name)
		}
	} else {
		*notes = append(*notes, fmt.Sprintf("%s: artifact write failed: %v", c.label, c.spillErr))
	}
	tail := c.tail.bytes()
	for i := 0; i < len(tail) && i < utf8.UTFMax && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	shown := strings.ToValidUTF8(string(tail), "\uFFFD")
	var b strings.Builder
	fmt.Fprintf(&b, "[truncated: showing last %d bytes; %d bytes captured / %d lines / %d bytes total", len(shown), c.captured, c.lines, c.total)
	if c.capped {
		fmt.Fprintf(&b, " (capture capped at %d bytes; further output discarded)", int64(maxArtifactBytes))
	}
	switch {
	case artifact != "" && c.capped:
		fmt.Fprintf(&b, "; captured output (first %d bytes) at %s", c.captured, artifact)
	case artifact != "":
		fmt.Fprintf(&b, "; full output at %s", artifact)
	default:
		b.WriteString("; artifact unavailable")
	}
	b.WriteString("]\n")
	b.WriteString(shown)
	return b.String(), artifact
}

// tailRing keeps the last tailBytes bytes written to it.
type tailRing struct {
	buf  [tailBytes]byte
	n    int // bytes held, up to tailBytes
	next int // where the next byte goes
}

func (t *tailRing) write(p []byte) {
	if len(p) >= tailBytes {
		copy(t.buf[:], p[len(p)-tailBytes:])
		t.n, t.next = tailBytes, 0
		return
	}
	k := copy(t.buf[t.next:], p)
	copy(t.buf[:], p[k:])
	t.next = (t.next + len(p)) % tailBytes
	t.n = min(tailBytes, t.n+len(p))
}

// bytes returns the held bytes, oldest first.
func (t *tailRing) bytes() []byte {
	out := make([]byte, 0, t.n)
	if t.n < tailBytes {
		return append(out, t.buf[:t.n]...)
	}
	out = append(out, t.buf[t.next:]...)
	return append(out, t.buf[:t.next]...)
}
