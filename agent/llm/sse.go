package llm

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// sseReadBuffer is the initial line buffer of the SSE reader; longer lines
// grow it, bounded overall by maxResponseBytes through capReader.
const sseReadBuffer = 64 << 10

// sseEvent is one server-sent event: its event name (may be empty) and its
// data lines joined with "\n".
type sseEvent struct {
	name string
	data []byte
}

// sseReader splits a text/event-stream body into events. Comment lines
// (starting with ':') and fields other than event and data are skipped.
type sseReader struct {
	br   *bufio.Reader
	line []byte
	// progress is called by the dialect for each event that carries
	// progress (a content, reasoning, tool-call or usage delta); nil
	// means nobody counts.
	progress func()
}

// progressed reports one event of progress.
func (s *sseReader) progressed() {
	if s.progress != nil {
		s.progress()
	}
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, sseReadBuffer)}
}

// next returns the next event with data. At the end of the body it returns
// io.EOF (or io.ErrUnexpectedEOF for a half-sent event).
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	have := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && have {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		if len(line) == 0 {
			if have {
				return ev, nil
			}
			ev.name = ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "data":
			if have {
				ev.data = append(ev.data, '\n')
			}
			ev.data = append(ev.data, value...)
			have = true
		}
	}
}

// readLine returns one line without its terminator (\n, \r\n or \r\n).
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.br.ReadSlice('\n')
		s.line = append(s.line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if len(s.line) > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		break
	}
	l := bytes.TrimSuffix(s.line, []byte("\n"))
	return bytes.TrimSuffix(l, []byte("\r")), nil
}
