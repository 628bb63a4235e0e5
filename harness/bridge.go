package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
)

// httpBase derives the HTTP bridge base from the relay URL (spec §4.2).
func httpBase(relayURL string) string {
	u := strings.TrimRight(relayURL, "/")
	switch {
	case strings.HasPrefix(u, "wss://"):
		return "https://" + strings.TrimPrefix(u, "wss://")
	case strings.HasPrefix(u, "ws://"):
		return "http://" + strings.TrimPrefix(u, "ws://")
	}
	return u
}

// relayIO reads and writes events: through the HTTP bridge when the relay
// offers one (NIP-11 "http_bridge"), otherwise over the websocket.
type relayIO struct {
	base    string
	key     *nostrkey.Secret
	authTag string // canonical JSON of the auth tag, for x-auth-tag; empty none
	client  *http.Client
	ws      *relayConn
	bridge  atomic.Bool
	// maxContent is the relay's NIP-11 limitation on one event (the
	// smaller of max_content_length and max_message_length); 0 unknown.
	maxContent atomic.Int64
}

func newRelayIO(relayURL string, key *nostrkey.Secret, authTag string, ws *relayConn) *relayIO {
	return &relayIO{
		base: httpBase(relayURL), key: key, authTag: authTag, ws: ws,
		client: &http.Client{
			Timeout: httpTimeout,
			Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, Proxy: http.ProxyFromEnvironment,
				MaxIdleConnsPerHost: maxIdleBridgeConns},
		},
	}
}

// close drops the bridge's idle connections, whose goroutines would
// otherwise live until the relay closes them.
func (r *relayIO) close() { r.client.CloseIdleConnections() }

// probe asks the relay's NIP-11 document whether it has an HTTP bridge.
func (r *relayIO) probe(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", r.base, nil)
	if err != nil {
		return
	}
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := r.client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var doc struct {
		Bridge *struct {
			Query string `json:"query"`
		} `json:"http_bridge"`
		Limitation *struct {
			MaxContent int64 `json:"max_content_length"`
			MaxMessage int64 `json:"max_message_length"`
		} `json:"limitation"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc) != nil {
		return
	}
	if doc.Bridge != nil && doc.Bridge.Query != "" {
		r.bridge.Store(true)
	}
	if l := doc.Limitation; l != nil {
		limit := l.MaxContent
		if l.MaxMessage > 0 && (limit <= 0 || l.MaxMessage < limit) {
			limit = l.MaxMessage
		}
		r.maxContent.Store(max(limit, 0))
	}
}

// errNoBridge means the bridge answered 404: use the websocket.
var errNoBridge = errors.New("no HTTP bridge")

func (r *relayIO) post(ctx context.Context, path string, body []byte, out any) error {
	url := r.base + path
	var last error
	for attempt := 0; attempt <= httpRetries; attempt++ {
		if attempt > 0 {
			d := jitter(time.Duration(250<<attempt) * time.Millisecond)
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		hdr, err := nip98.Header(r.key, url, "POST", nip98.Options{Body: body, Nonce: true})
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", hdr)
		req.Header.Set("Content-Type", "application/json")
		if r.authTag != "" {
			req.Header.Set(workspace.HeaderAuthTag, r.authTag)
		}
		resp, err := r.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			last = err
			continue
		}
		data, rerr := io.ReadAll(io.LimitReader(resp.Body, maxHTTPBody))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
			return errNoBridge
		case resp.StatusCode == 429 || resp.StatusCode >= 502 && resp.StatusCode <= 504:
			last = fmt.Errorf("POST %s: status %d: %s", path, resp.StatusCode, bytes.TrimSpace(data))
			continue
		case resp.StatusCode/100 != 2:
			return fmt.Errorf("POST %s: status %d: %s", path, resp.StatusCode, bytes.TrimSpace(data))
		}
		if rerr != nil {
			last = rerr
			continue
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("POST %s: decode: %w", path, err)
		}
		return nil
	}
	return last
}

// query returns the events matching filters, signatures verified.
func (r *relayIO) query(ctx context.Context, filters ...nostr.Filter) ([]*nostr.Event, error) {
	if r.bridge.Load() {
		body, _ := json.Marshal(filters)
		var evs []*nostr.Event
		err := r.post(ctx, "/query", body, &evs)
		if err == nil {
			return verified(evs), nil
		}
		if !errors.Is(err, errNoBridge) {
			return nil, err
		}
		r.bridge.Store(false)
	}
	evs, err := r.ws.queryWS(ctx, filters)
	if err != nil {
		return nil, err
	}
	return verified(evs), nil
}

// count returns the /count answer, or an error when unavailable.
func (r *relayIO) count(ctx context.Context, filters ...nostr.Filter) (int, error) {
	if !r.bridge.Load() {
		return 0, errNoBridge
	}
	body, _ := json.Marshal(filters)
	var out struct {
		Count int `json:"count"`
	}
	if err := r.post(ctx, "/count", body, &out); err != nil {
		return 0, err
	}
	return out.Count, nil
}

// publish signs nothing: ev must be signed. It goes through /events or,
// without a bridge, as an EVENT on the socket waiting for OK.
func (r *relayIO) publish(ctx context.Context, ev *nostr.Event) error {
	if r.bridge.Load() {
		body, _ := json.Marshal(ev)
		var out struct {
			Accepted *bool  `json:"accepted"`
			Message  string `json:"message"`
		}
		err := r.post(ctx, "/events", body, &out)
		if err == nil {
			if out.Accepted != nil && !*out.Accepted {
				return fmt.Errorf("relay refused event: %s", out.Message)
			}
			return nil
		}
		if !errors.Is(err, errNoBridge) {
			return err
		}
		r.bridge.Store(false)
	}
	return r.ws.publishWS(ctx, ev, true)
}

func verified(evs []*nostr.Event) []*nostr.Event {
	out := evs[:0]
	for _, ev := range evs {
		if ev == nil {
			continue
		}
		if ok, _ := ev.CheckSignature(); ok {
			out = append(out, ev)
		}
	}
	return out
}
