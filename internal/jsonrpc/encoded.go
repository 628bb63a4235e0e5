package jsonrpc

import "bytes"

// Encoded is a result that its producer has already encoded as one valid,
// compact JSON value (encoding/json's output is). A Handler may return it
// to have it sent as is: a json.RawMessage is re-scanned and compacted by
// encoding/json, which for a large tool result costs more than producing
// it. An Encoded holding a newline (which would break the framing) or
// nothing is sent through the ordinary path instead.
type Encoded []byte

// encodedFrame is the reply frame for an Encoded result, or nil when it
// must take the ordinary path.
func encodedFrame(id []byte, enc Encoded) []byte {
	if len(enc) == 0 || bytes.IndexByte(enc, '\n') >= 0 {
		return nil
	}
	const head, mid = `{"jsonrpc":"` + Version + `","id":`, `,"result":`
	b := make([]byte, 0, len(head)+len(id)+len(mid)+len(enc)+2)
	b = append(b, head...)
	b = append(b, id...)
	b = append(b, mid...)
	b = append(b, enc...)
	return append(b, '}', '\n')
}
