package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
)

// errNoBridge: the relay named a bridge in NIP-11 but has no such route;
// the client falls back to websocket.
var errNoBridge = errors.New("relay has no HTTP bridge")

// staleAuthTagHint is appended to a 403 while BUZZ_AUTH_TAG is set.
const staleAuthTagHint = " (BUZZ_AUTH_TAG is set — it may be stale or revoked; try unsetting it)"

// post sends body to path with a fresh NIP-98 token and returns the
// response for a 2xx status; every other outcome becomes an attemptErr.
func (c *client) post(ctx context.Context, path string, body []byte, decode func(io.Reader) error) *attemptErr {
	url := c.base + path
	hdr, err := nip98.Header(c.key, url, http.MethodPost, nip98.Options{Body: body, Nonce: true})
	if err != nil {
		return fatal(otherErr("sign NIP-98 token: %v", err))
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fatal(userErr("invalid relay URL %q: %v", c.base, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", hdr)
	if c.auth != nil {
		req.Header.Set(workspace.HeaderAuthTag, c.auth.JSON())
	}
	resp, err := c.httpc.Do(req)
	if err != nil {
		return classifyHTTPErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		if err := decode(io.LimitReader(resp.Body, maxResponseBytes)); err != nil {
			var e *Error
			if errors.As(err, &e) {
				return fatal(e)
			}
			return &attemptErr{retry: true, ambiguous: true,
				err: &Error{Category: catOther, Message: fmt.Sprintf("unreadable relay reply from %s: %v", path, err)}}
		}
		return nil
	}
	text := errorText(resp.Body)
	switch resp.StatusCode {
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return fatal(&Error{Category: catOther, Message: errNoBridge.Error()})
	case http.StatusUnauthorized, http.StatusForbidden:
		msg := fmt.Sprintf("relay error %d: %s", resp.StatusCode, text)
		if resp.StatusCode == http.StatusForbidden && c.auth != nil {
			msg += staleAuthTagHint
		}
		return fatal(&Error{Category: catAuth, Message: msg})
	case http.StatusTooManyRequests:
		return &attemptErr{err: relayErr(resp.StatusCode, text, true), retry: true, after: retryHint(text)}
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return &attemptErr{err: relayErr(resp.StatusCode, text, true), retry: true, ambiguous: true}
	}
	return fatal(relayErr(resp.StatusCode, text, false))
}

// errorText pulls "error" (or "message") out of a JSON error body, else
// the trimmed body.
func errorText(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, maxErrorBodyBytes))
	var v struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &v) == nil {
		if v.Error != "" {
			return v.Error
		}
		if v.Message != "" {
			return v.Message
		}
	}
	return strings.TrimSpace(string(b))
}

func isNoBridge(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Category == catOther && e.Message == errNoBridge.Error()
}

// bridgeQuery is POST /query with a JSON array of filters.
func (c *client) bridgeQuery(ctx context.Context, filters []filter) ([]*nostr.Event, error) {
	body, err := json.Marshal(filters)
	if err != nil {
		return nil, otherErr("encode filters: %v", err)
	}
	var out []*nostr.Event
	err = retry(ctx, false, func(ctx context.Context) *attemptErr {
		out = out[:0]
		return c.post(ctx, "/query", body, func(r io.Reader) error {
			return decodeEvents(r, func(ev *nostr.Event) { out = append(out, ev) })
		})
	})
	if isNoBridge(err) {
		return nil, errNoBridge
	}
	return out, err
}

// decodeEvents reads a JSON array of events one element at a time.
func decodeEvents(r io.Reader, fn func(*nostr.Event)) error {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil { // null: no events
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("expected a JSON array of events")
	}
	for dec.More() {
		ev := new(nostr.Event)
		if err := dec.Decode(ev); err != nil {
			return err
		}
		fn(ev)
	}
	_, err = dec.Token()
	return err
}

// bridgePublish is POST /events with one signed event. The same signed
// event is re-sent on every attempt, so a retry can never duplicate it.
func (c *client) bridgePublish(ctx context.Context, ev *nostr.Event) (writeResult, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return writeResult{}, otherErr("encode event: %v", err)
	}
	mode := retryWrite
	if ev.Kind >= 9040 && ev.Kind <= 9044 {
		mode = retryModeration
	}
	var res writeResult
	err = retryWith(ctx, mode, func(ctx context.Context) *attemptErr {
		return c.post(ctx, "/events", body, func(r io.Reader) error {
			res = writeResult{}
			return json.NewDecoder(r).Decode(&res)
		})
	})
	if isNoBridge(err) {
		return writeResult{}, errNoBridge
	}
	if err != nil {
		return writeResult{}, err
	}
	if res.EventID == "" {
		res.EventID = ev.ID
	}
	if !res.Accepted {
		return res, relayErr(http.StatusBadRequest, res.Message, false)
	}
	return res, nil
}
