package relayclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
)

// The HTTP bridge (harness.md §4.2, nostrgit-cli.md §6.2): POST /query,
// /count and /events on the relay's HTTP base, each with a fresh NIP-98
// token over the exact URL, method POST and the body's SHA-256 (the
// payload tag), plus x-auth-tag when an attestation is configured. NIP-86
// management posts to the base itself.

// HTTPBase maps a relay URL to its HTTP base: ws(s):// becomes
// http(s)://, a bare host gets http://, trailing slashes go.
func HTTPBase(u string) string {
	u = strings.TrimSpace(u)
	switch {
	case strings.HasPrefix(u, "wss://"):
		u = "https://" + u[len("wss://"):]
	case strings.HasPrefix(u, "ws://"):
		u = "http://" + u[len("ws://"):]
	case strings.HasPrefix(u, "https://"), strings.HasPrefix(u, "http://"):
	default:
		u = "http://" + u
	}
	return strings.TrimRight(u, "/")
}

// WebsocketURL is the websocket form of an HTTP base.
func WebsocketURL(base string) string {
	if strings.HasPrefix(base, "https://") {
		return "wss://" + base[len("https://"):]
	}
	return "ws://" + strings.TrimPrefix(base, "http://")
}

// Info is what the relay's NIP-11 document says about talking to it.
type Info struct {
	Bridge       bool // it names an HTTP bridge
	AuthRequired bool // limitation.auth_required: expect a challenge first
	// MaxContent is the smaller of max_content_length and
	// max_message_length; 0 unknown.
	MaxContent int64
}

// parseInfo reads a NIP-11 document; a garbled one says nothing.
func parseInfo(b []byte) Info {
	var doc struct {
		Bridge     json.RawMessage `json:"http_bridge"`
		Limitation struct {
			AuthRequired bool  `json:"auth_required"`
			MaxContent   int64 `json:"max_content_length"`
			MaxMessage   int64 `json:"max_message_length"`
		} `json:"limitation"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return Info{}
	}
	l := doc.Limitation
	limit := l.MaxContent
	if l.MaxMessage > 0 && (limit <= 0 || l.MaxMessage < limit) {
		limit = l.MaxMessage
	}
	return Info{
		Bridge:       len(doc.Bridge) > 0 && string(doc.Bridge) != "null",
		AuthRequired: l.AuthRequired,
		MaxContent:   max(limit, 0),
	}
}

// fetchInfo GETs the NIP-11 document once; a relay without one (non-2xx)
// has none of the features.
func (c *Client) fetchInfo(ctx context.Context) (Info, *attempt) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base, nil)
	if err != nil {
		return Info{}, fatal(userErr("invalid relay URL %q: %v", c.base, err))
	}
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := c.httpc.Do(req)
	if err != nil {
		return Info{}, classifyHTTP(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return Info{}, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxInfoBytes))
	if err != nil {
		return Info{}, classifyHTTP(err)
	}
	return parseInfo(b), nil
}

// noBridge is the attempt error of a bridge route that is not there.
var noBridge = &Error{Category: CatOther, Message: ErrNoBridge.Error()}

// signedPost builds a POST of body to target with a fresh NIP-98 token.
func (c *Client) signedPost(ctx context.Context, target, contentType string, body []byte) (*http.Request, *attempt) {
	hdr, err := nip98.Header(c.opt.Key, target, http.MethodPost, nip98.Options{Body: body, Nonce: true})
	if err != nil {
		return nil, fatal(otherErr("sign NIP-98 token: %v", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, fatal(userErr("invalid relay URL %q: %v", c.base, err))
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", hdr)
	return req, nil
}

// post sends body to a bridge path and decodes a 2xx answer; every other
// outcome becomes an attempt.
func (c *Client) post(ctx context.Context, path string, body []byte, decode func(io.Reader) error) *attempt {
	ctx, cancel := c.attemptContext(ctx)
	defer cancel()
	req, ae := c.signedPost(ctx, c.base+path, "application/json", body)
	if ae != nil {
		return ae
	}
	if c.opt.AuthTagJSON != "" {
		req.Header.Set(workspace.HeaderAuthTag, c.opt.AuthTagJSON)
	}
	resp, err := c.httpc.Do(req)
	if err != nil {
		return classifyHTTP(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		if err := decode(io.LimitReader(resp.Body, maxResponseBytes)); err != nil {
			var e *Error
			if errors.As(err, &e) {
				return fatal(e)
			}
			return &attempt{retry: true, ambiguous: true,
				err: otherErr("unreadable relay reply from %s: %v", path, err)}
		}
		return nil
	}
	text := errorText(resp.Body)
	switch resp.StatusCode {
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return fatal(noBridge)
	case http.StatusUnauthorized, http.StatusForbidden:
		msg := fmt.Sprintf("relay error %d: %s", resp.StatusCode, text)
		if resp.StatusCode == http.StatusForbidden && c.opt.AuthTagJSON != "" {
			msg += staleAuthTagHint
		}
		return fatal(&Error{Category: CatAuth, Message: msg})
	case http.StatusTooManyRequests:
		return &attempt{err: relayErr(resp.StatusCode, text, true), retry: true, after: retryHint(text)}
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return &attempt{err: relayErr(resp.StatusCode, text, true), retry: true, ambiguous: true}
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

// bridgeQuery is POST /query with a JSON array of filters.
func (c *Client) bridgeQuery(ctx context.Context, filters []Filter) ([]*nostr.Event, error) {
	body, err := json.Marshal(filters)
	if err != nil {
		return nil, otherErr("encode filters: %v", err)
	}
	var out []*nostr.Event
	err = retry(ctx, retryRead, func(ctx context.Context) *attempt {
		out = out[:0]
		return c.post(ctx, "/query", body, func(r io.Reader) error {
			return decodeEvents(r, func(ev *nostr.Event) { out = append(out, ev) })
		})
	})
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
		return errors.New("expected a JSON array of events")
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

// bridgeCount is POST /count.
func (c *Client) bridgeCount(ctx context.Context, filters []Filter) (int64, error) {
	body, err := json.Marshal(filters)
	if err != nil {
		return 0, otherErr("encode filters: %v", err)
	}
	var n int64
	err = retry(ctx, retryRead, func(ctx context.Context) *attempt {
		return c.post(ctx, "/count", body, func(r io.Reader) error {
			var out struct {
				Count *int64 `json:"count"`
			}
			if err := json.NewDecoder(r).Decode(&out); err != nil {
				return err
			}
			if out.Count == nil {
				return errors.New(`no "count" in the answer`)
			}
			n = *out.Count
			return nil
		})
	})
	return n, err
}

// bridgePublish is POST /events with one signed event. The same signed
// event is re-sent on every attempt, so a retry can never duplicate it.
func (c *Client) bridgePublish(ctx context.Context, ev *nostr.Event) (Result, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return Result{}, otherErr("encode event: %v", err)
	}
	var res Result
	err = retry(ctx, writeMode(ev.Kind), func(ctx context.Context) *attempt {
		return c.post(ctx, "/events", body, func(r io.Reader) error {
			res = Result{}
			return json.NewDecoder(r).Decode(&res)
		})
	})
	if err != nil {
		return Result{}, err
	}
	if res.EventID == "" {
		res.EventID = ev.ID
	}
	if !res.Accepted {
		return res, relayErr(http.StatusBadRequest, res.Message, false)
	}
	return res, nil
}

// contentTypeRPC is NIP-86's request type.
const contentTypeRPC = "application/nostr+json+rpc"

// Manage calls one NIP-86 (relay management) method: POST to the relay
// URL with a NIP-98 token (u = that URL, method POST, payload = the
// body's SHA-256). write says a repeat would act twice (createinvite), so
// an ambiguous failure is delivery_unknown.
func (c *Client) Manage(ctx context.Context, method string, write bool, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"method": method, "params": params})
	if err != nil {
		return nil, otherErr("encode %s request: %v", method, err)
	}
	target := c.base
	if u, err := url.Parse(target); err == nil && u.Path == "" {
		target += "/"
	}
	mode := retryRead
	if write {
		mode = retryWrite
	}
	var result json.RawMessage
	err = retry(ctx, mode, func(ctx context.Context) *attempt {
		ctx, cancel := c.attemptContext(ctx)
		defer cancel()
		req, ae := c.signedPost(ctx, target, contentTypeRPC, body)
		if ae != nil {
			return ae
		}
		resp, err := c.httpc.Do(req)
		if err != nil {
			return classifyHTTP(err)
		}
		defer resp.Body.Close()
		var rep struct {
			Result json.RawMessage `json:"result"`
			Error  string          `json:"error"`
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		if err != nil {
			return classifyHTTP(err)
		}
		decodeErr := json.Unmarshal(raw, &rep)
		text := rep.Error
		if text == "" {
			text = strings.TrimSpace(string(raw[:min(len(raw), maxErrorBodyBytes)]))
		}
		switch {
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			return fatal(&Error{Category: CatAuth, Message: "auth error: relay error " + strconv.Itoa(resp.StatusCode) + ": " + text + " (members commands need the relay owner's or an admin's key)"})
		case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
			return &attempt{err: relayErr(resp.StatusCode, text, true), retry: true, ambiguous: true}
		case resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusBadRequest:
			return fatal(relayErr(resp.StatusCode, text+" (does this relay speak NIP-86?)", false))
		case resp.StatusCode != http.StatusOK || decodeErr != nil:
			return fatal(relayErr(resp.StatusCode, text, false))
		case rep.Error != "":
			return fatal(relayErr(resp.StatusCode, rep.Error, false))
		}
		result = rep.Result
		return nil
	})
	return result, err
}

// Signed sends method to target, one of the relay's HTTP endpoints (a
// hosted repository's buzz-diff and buzz-merge), with a fresh NIP-98
// token carrying the configured attestation among its tags (the git
// routes read it there) and body as JSON when there is one, and returns
// at most max bytes of a 200 answer, else a Refusal. It is tried once: a
// merge is not sent twice.
func (c *Client) Signed(ctx context.Context, method, target string, body []byte, max int64) ([]byte, error) {
	ctx, cancel := c.attemptContext(ctx)
	defer cancel()
	opt := nip98.Options{Body: body, Nonce: true}
	if len(c.opt.AuthTag) > 0 {
		opt.Tags = nostr.Tags{c.opt.AuthTag}
	}
	hdr, err := nip98.Header(c.opt.Key, target, method, opt)
	if err != nil {
		return nil, otherErr("sign NIP-98 token: %v", err)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, userErr("invalid URL %q: %v", target, err)
	}
	req.Header.Set("Authorization", hdr)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.httpc.Do(req)
	if err != nil {
		return nil, classifyHTTP(err).err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, Refusal(resp.StatusCode, errorText(resp.Body))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max))
	if err != nil {
		return nil, networkErr("read %s: %v", target, err)
	}
	return b, nil
}
