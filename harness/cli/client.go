package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipoa"

	"github.com/nbd-wtf/go-nostr"
)

// filter is one NIP-01 filter, kept as a map so that relay extensions
// (search, before_id, depth_limit) pass through unchanged.
type filter map[string]any

// writeResult is the relay's answer to one event, as printed.
type writeResult struct {
	EventID  string `json:"event_id"`
	Accepted bool   `json:"accepted"`
	Message  string `json:"message"`
}

// transportKind says how the client talks to the relay.
type transportKind int

const (
	transportUnknown transportKind = iota // not probed yet
	transportBridge                       // HTTP bridge with NIP-98
	transportWS                           // NIP-01 websocket with NIP-42
)

// client talks to one relay as one key. It is not safe for concurrent use;
// the CLI runs one command at a time.
type client struct {
	base    string // http(s)://host[:port][/path], no trailing slash
	key     *nostrkey.Secret
	pubkey  string // hex
	auth    *authTag
	timeout time.Duration
	connect time.Duration
	httpc   *http.Client

	kind         transportKind
	authRequired bool // from NIP-11: wait for the AUTH challenge first
	ws           *wsConn
}

// normalizeRelay maps ws(s):// to http(s)://, adds http:// when no scheme
// is given, and strips trailing slashes.
func normalizeRelay(u string) string {
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

// wsURL is the websocket form of the base URL.
func (c *client) wsURL() string {
	if strings.HasPrefix(c.base, "https://") {
		return "wss://" + c.base[len("https://"):]
	}
	return "ws://" + strings.TrimPrefix(c.base, "http://")
}

// sign fills in the event and signs it with the CLI key, appending the
// NIP-OA tag when configured.
func (c *client) sign(ev *nostr.Event) error {
	if ev.CreatedAt == 0 {
		ev.CreatedAt = nostr.Now()
	}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	if c.auth != nil {
		ev.Tags = append(ev.Tags, c.auth.Tag())
	}
	n := 0
	for _, t := range ev.Tags {
		if len(t) > 0 && t[0] == nipoa.TagName {
			n++
		}
	}
	if c.auth != nil && n != 1 {
		return otherErr("internal error: event would carry %d auth tags", n)
	}
	if err := c.key.SignEvent(ev); err != nil {
		return otherErr("sign event: %v", err)
	}
	return nil
}

// probe decides the transport from the relay's NIP-11 document: a relay
// that names an HTTP bridge gets HTTP, anything else websocket.
func (c *client) probe(ctx context.Context) error {
	if c.kind != transportUnknown {
		return nil
	}
	var doc struct {
		Bridge     json.RawMessage `json:"http_bridge"`
		Limitation struct {
			AuthRequired bool `json:"auth_required"`
		} `json:"limitation"`
	}
	err := retry(ctx, false, func(ctx context.Context) *attemptErr {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base, nil)
		if err != nil {
			return fatal(userErr("invalid relay URL %q: %v", c.base, err))
		}
		req.Header.Set("Accept", "application/nostr+json")
		resp, err := c.httpc.Do(req)
		if err != nil {
			return classifyHTTPErr(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return nil // no NIP-11 here: plain websocket
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxInfoBytes))
		if err != nil {
			return classifyHTTPErr(err)
		}
		json.Unmarshal(b, &doc) // a garbled document means no bridge
		return nil
	})
	if err != nil {
		return err
	}
	c.authRequired = doc.Limitation.AuthRequired
	c.kind = transportWS
	if len(doc.Bridge) > 0 && string(doc.Bridge) != "null" {
		c.kind = transportBridge
	}
	return nil
}

// query runs the filters (OR-ed) and returns the events. One request: the
// result is bounded by the filters' limits and maxResponseBytes.
func (c *client) query(ctx context.Context, filters ...filter) ([]*nostr.Event, error) {
	if err := c.probe(ctx); err != nil {
		return nil, err
	}
	if c.kind == transportBridge {
		evs, err := c.bridgeQuery(ctx, filters)
		if err != errNoBridge {
			return evs, err
		}
		c.kind = transportWS
	}
	return c.wsQuery(ctx, filters)
}

// publish sends one signed event and returns the relay's verdict. Kinds
// 20000–29999 always go over websocket: the bridge refuses ephemeral events.
func (c *client) publish(ctx context.Context, ev *nostr.Event) (writeResult, error) {
	if err := c.probe(ctx); err != nil {
		return writeResult{}, err
	}
	if c.kind == transportBridge && !(ev.Kind >= 20000 && ev.Kind < 30000) {
		res, err := c.bridgePublish(ctx, ev)
		if err != errNoBridge {
			return res, err
		}
		c.kind = transportWS
	}
	return c.wsPublish(ctx, ev)
}

// close releases the websocket, if one was opened.
func (c *client) close() {
	if c.ws != nil {
		c.ws.close()
		c.ws = nil
	}
}

// fetchOne fetches an event by id; nil when the relay does not have it.
func (c *client) fetchOne(ctx context.Context, id string) (*nostr.Event, error) {
	evs, err := c.query(ctx, filter{"ids": []string{id}, "limit": 1})
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if ev.ID == id {
			return ev, nil
		}
	}
	return nil, nil
}
