package relayclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
)

// Filter is a NIP-01 filter with the buzz relay's extensions, which
// other relays ignore.
type Filter struct {
	nostr.Filter
	// BeforeID is a keyset cursor with Until: skip ids >= it at
	// created_at == Until ("before_id"); "" none.
	BeforeID string
	// DepthLimit bounds a thread's reply depth ("depth_limit"); 0 none.
	DepthLimit int64
}

// MarshalJSON writes the NIP-01 filter with the extensions beside it,
// keys in sorted order, so that a request's bytes depend on the filter
// alone.
func (f Filter) MarshalJSON() ([]byte, error) {
	b, err := f.Filter.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if f.BeforeID != "" {
		m["before_id"], _ = json.Marshal(f.BeforeID)
	}
	if f.DepthLimit != 0 {
		m["depth_limit"], _ = json.Marshal(f.DepthLimit)
	}
	return json.Marshal(m)
}

// Plain wraps NIP-01 filters without extensions.
func Plain(filters []nostr.Filter) []Filter {
	out := make([]Filter, len(filters))
	for i, f := range filters {
		out[i] = Filter{Filter: f}
	}
	return out
}

// Result is the relay's answer to one event.
type Result struct {
	EventID  string `json:"event_id"`
	Accepted bool   `json:"accepted"`
	Message  string `json:"message"`
}

// Options configures a Client. The zero value reads anonymously with no
// per-attempt timeout on net/http's default client.
type Options struct {
	// Key signs NIP-98 tokens and NIP-42 AUTH events; nil is anonymous.
	Key *nostrkey.Secret
	// AuthTag is the NIP-OA tag added to AUTH events and AuthTagJSON its
	// canonical JSON, sent as x-auth-tag; both empty when none.
	AuthTag     nostr.Tag
	AuthTagJSON string
	// HTTPClient carries bridge requests and the client's own websocket;
	// nil is http.DefaultClient.
	HTTPClient *http.Client
	// Timeout bounds each attempt; 0 leaves it to ctx and HTTPClient.
	Timeout time.Duration
	// ConnectTimeout bounds the client's own websocket dial and login;
	// 0 is Timeout, or no bound.
	ConnectTimeout time.Duration
	// WriteCap bounds a whole websocket publish with its retries; 0 none.
	WriteCap time.Duration
	// Subscriber, when set, carries websocket reads and writes on its
	// long-lived socket instead of the client dialling its own.
	Subscriber *Subscriber
}

// Client reads and writes events on one relay as one key: through the
// HTTP bridge when the relay's NIP-11 document names one, else over the
// websocket. Its errors are *Error, classified, after the retry policy of
// nostrgit-cli.md §6.2 (MaxAttempts, jittered, a 429's hint honoured, a
// write that may have landed reported as delivery_unknown). It is safe
// for concurrent use; its own websocket serves one operation at a time.
type Client struct {
	base  string
	opt   Options
	httpc *http.Client

	probeMu sync.Mutex
	probed  bool
	info    Info
	bridge  atomic.Bool

	wsMu sync.Mutex // the client's own websocket, one operation at a time
	ws   *Conn
	subs int // REQ ids used on ws
}

// New returns a client for relayURL (ws://, wss://, http://, https:// or
// a bare host).
func New(relayURL string, opt Options) *Client {
	// Either form of the attestation gives the other: the harness knows
	// only the JSON, and signed requests (Signed) carry the tag.
	if len(opt.AuthTag) == 0 && opt.AuthTagJSON != "" {
		json.Unmarshal([]byte(opt.AuthTagJSON), &opt.AuthTag) // left empty when it is not a tag
	}
	c := &Client{base: HTTPBase(relayURL), opt: opt, httpc: opt.HTTPClient}
	if c.httpc == nil {
		c.httpc = http.DefaultClient
	}
	return c
}

// Base is the relay's HTTP base URL.
func (c *Client) Base() string { return c.base }

// HTTPClient is the client requests go through.
func (c *Client) HTTPClient() *http.Client { return c.httpc }

func (c *Client) attemptContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.opt.Timeout > 0 {
		return context.WithTimeout(ctx, c.opt.Timeout)
	}
	return context.WithCancel(ctx)
}

// Probe reads the relay's NIP-11 document once (retrying like a read) and
// decides the transport: a relay that names an HTTP bridge gets HTTP,
// anything else the websocket. Later calls return the first answer.
func (c *Client) Probe(ctx context.Context) (Info, error) {
	c.probeMu.Lock()
	defer c.probeMu.Unlock()
	if c.probed {
		return c.info, nil
	}
	var info Info
	err := retry(ctx, retryRead, func(ctx context.Context) *attempt {
		var ae *attempt
		info, ae = c.fetchInfo(ctx)
		return ae
	})
	if err != nil {
		return Info{}, err
	}
	c.probed, c.info = true, info
	c.bridge.Store(info.Bridge)
	return info, nil
}

// ProbeOrWebsocket is Probe for a client that must work whatever the
// relay's HTTP side does: when the NIP-11 document cannot be read, the
// client is set to the websocket for good (a later request does not probe
// again, so it neither waits out another retry ladder nor fails for want
// of a document) and the probe's error is returned for the caller to log.
func (c *Client) ProbeOrWebsocket(ctx context.Context) (Info, error) {
	info, err := c.Probe(ctx)
	if err != nil {
		c.SetBridge(false)
		return Info{}, err
	}
	return info, nil
}

// Bridge reports whether requests go through the HTTP bridge.
func (c *Client) Bridge() bool { return c.bridge.Load() }

// SetBridge forces the transport choice, as a probe would.
func (c *Client) SetBridge(on bool) {
	c.probeMu.Lock()
	c.probed = true
	c.info.Bridge = on
	c.probeMu.Unlock()
	c.bridge.Store(on)
}

// Query runs the filters (OR-ed) and returns the events whose signatures
// verify. One request: the result is bounded by the filters' limits and
// the response caps.
func (c *Client) Query(ctx context.Context, filters ...nostr.Filter) ([]*nostr.Event, error) {
	return c.QueryExt(ctx, Plain(filters)...)
}

// QueryExt is Query with the relay's filter extensions.
func (c *Client) QueryExt(ctx context.Context, filters ...Filter) ([]*nostr.Event, error) {
	if _, err := c.Probe(ctx); err != nil {
		return nil, err
	}
	if c.bridge.Load() {
		evs, err := c.bridgeQuery(ctx, filters)
		if err != noBridge {
			return verified(evs), errOrNil(err)
		}
		c.bridge.Store(false)
	}
	if s := c.opt.Subscriber; s != nil {
		return s.query(ctx, filters) // checked as they came (Subscriber.event)
	}
	evs, err := c.wsQuery(ctx, filters)
	return verified(evs), err
}

// Count returns how many events the filters match: the bridge's /count,
// else a NIP-45 COUNT on the websocket.
func (c *Client) Count(ctx context.Context, filters ...nostr.Filter) (int64, error) {
	if _, err := c.Probe(ctx); err != nil {
		return 0, err
	}
	if c.bridge.Load() {
		n, err := c.bridgeCount(ctx, Plain(filters))
		if err != noBridge {
			return n, errOrNil(err)
		}
		c.bridge.Store(false)
	}
	if s := c.opt.Subscriber; s != nil {
		return s.count(ctx, Plain(filters))
	}
	return c.wsCount(ctx, Plain(filters))
}

// Publish sends one signed event and returns the relay's verdict. Kinds
// 20000–29999 always go over the websocket: the bridge refuses ephemeral
// events.
func (c *Client) Publish(ctx context.Context, ev *nostr.Event) (Result, error) {
	if _, err := c.Probe(ctx); err != nil {
		return Result{}, err
	}
	if c.bridge.Load() && !ephemeral(ev.Kind) {
		res, err := c.bridgePublish(ctx, ev)
		if err != noBridge {
			return res, errOrNil(err)
		}
		c.bridge.Store(false)
	}
	if s := c.opt.Subscriber; s != nil {
		err := s.Publish(ctx, ev, true)
		if err != nil {
			return Result{}, err
		}
		return Result{EventID: ev.ID, Accepted: true}, nil
	}
	return c.wsPublish(ctx, ev)
}

// Close releases the client's own websocket, if one was opened, and the
// HTTP client's idle connections, whose goroutines would otherwise live
// until the relay closes them.
func (c *Client) Close() {
	c.wsMu.Lock()
	defer c.wsMu.Unlock()
	if c.ws != nil {
		c.ws.Close()
		c.ws = nil
	}
	c.httpc.CloseIdleConnections()
}

func ephemeral(kind int) bool { return kind >= 20000 && kind < 30000 }

// errOrNil keeps a nil *Error from becoming a non-nil error.
func errOrNil(err error) error {
	if e, ok := err.(*Error); ok && e == nil {
		return nil
	}
	return err
}

// verified keeps the events whose id hashes their content and whose
// signature is their author's over that id (nostrkey.CheckEvent): what
// the client returns has been checked once, here or, on a Subscriber's
// connection, as it came, so callers check nothing again.
func verified(evs []*nostr.Event) []*nostr.Event {
	out := evs[:0]
	for _, ev := range evs {
		if ev == nil {
			continue
		}
		if nostrkey.CheckEvent(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// The client's own websocket: dialled on first use, driven synchronously
// (every operation writes its frame and reads until its answer, answering
// NIP-42 challenges on the way), dropped after a failed attempt.

// dial opens the websocket; a relay that says auth_required in NIP-11 is
// given the chance to send its challenge and is answered before any
// request, which saves a refused round trip. Called with wsMu held.
func (c *Client) dial(ctx context.Context) (*Conn, *attempt) {
	if c.ws != nil {
		return c.ws, nil
	}
	d := c.opt.ConnectTimeout
	if d <= 0 {
		d = c.opt.Timeout
	}
	dctx, cancel := ctx, context.CancelFunc(func() {})
	if d > 0 {
		dctx, cancel = context.WithTimeout(ctx, d)
	}
	defer cancel()
	url := WebsocketURL(c.base)
	// A write is bounded by the attempt, as every other step of it.
	w, err := Dial(dctx, url, ConnOptions{Key: c.opt.Key, AuthTag: c.opt.AuthTag, HTTPClient: c.httpc, WriteTimeout: c.opt.Timeout})
	if err != nil {
		return nil, &attempt{err: networkErr("connect %s: %s", url, err), retry: true}
	}
	if c.Info().AuthRequired && c.opt.Key != nil {
		if _, err := w.Login(dctx, 0); err != nil {
			w.Close()
			return nil, readFailure(err)
		}
	}
	c.ws = w
	return w, nil
}

// drop forgets a broken connection so the next attempt dials again.
func (c *Client) drop() {
	if c.ws != nil {
		c.ws.CloseNow()
		c.ws = nil
	}
}

func readFailure(err error) *attempt {
	var refused *AuthRefusedError
	if errors.As(err, &refused) {
		return fatal(authErr("relay refused AUTH: %s", refused.Reason))
	}
	return &attempt{err: networkErr("read: %s", err), retry: true, ambiguous: true}
}

func send(ctx context.Context, w *Conn, frame []any) *attempt {
	b, err := json.Marshal(frame)
	if err != nil {
		return fatal(otherErr("encode frame: %v", err))
	}
	if err := w.Write(ctx, b); err != nil {
		return &attempt{err: networkErr("write: %s", err), retry: true, ambiguous: true}
	}
	return nil
}

// authRefusal is whether a CLOSED/OK reason means "log in first".
func authRefusal(reason string) bool { return strings.HasPrefix(reason, "auth-required:") }

// request is one frame sent on the client's own websocket that the relay
// may refuse with auth-required: before our AUTH succeeded. It is sent
// once more after the login, never more.
type request struct {
	w          *Conn
	frame      []any
	sentAuthed bool // the frame went out after AUTH succeeded
	resend     bool // send again once AUTH succeeds
	retried    bool
}

func (r *request) send(ctx context.Context) *attempt {
	r.sentAuthed = r.w.Authed()
	return send(ctx, r.w, r.frame)
}

// next reads the next envelope, sending the frame again once a pending
// login succeeds.
func (r *request) next(ctx context.Context) (nostr.Envelope, *attempt) {
	env, err := r.w.Read(ctx)
	if err != nil {
		return nil, readFailure(err)
	}
	if r.resend && r.w.Authed() {
		r.resend = false
		if ae := send(ctx, r.w, r.frame); ae != nil {
			return nil, ae
		}
	}
	return env, nil
}

// refusedForAuth handles an auth-required: refusal of the frame: it
// reports whether the request goes on (sent again now or after the login
// underway); false means the refusal stands.
func (r *request) refusedForAuth(ctx context.Context, key bool) (bool, *attempt) {
	w := r.w
	awaiting := !w.Authed() && key
	if r.retried || !(awaiting || (w.Authed() && !r.sentAuthed)) {
		return false, nil
	}
	r.retried = true
	if w.Authed() {
		return true, send(ctx, w, r.frame)
	}
	r.resend = true
	if !w.Authenticating() && w.Challenged() {
		return true, wrapAttempt(w.Authenticate(ctx))
	}
	return true, nil
}

// refused handles a refusal of the request (a CLOSED of its subscription,
// an OK false for its event), what naming it in the error: it goes on
// (nil, true) after an auth-required: refusal a login can fix; otherwise
// the refusal is the request's final error.
func (r *request) refused(ctx context.Context, reason string, key bool, what string) (*attempt, bool) {
	if authRefusal(reason) {
		if goesOn, ae := r.refusedForAuth(ctx, key); goesOn || ae != nil {
			return ae, ae == nil
		}
	}
	if authRefusal(reason) || strings.HasPrefix(reason, "restricted:") {
		return fatal(authErr("relay refused the %s: %s", what, reason)), false
	}
	return fatal(relayErr(http.StatusBadRequest, reason, false)), false
}

func wrapAttempt(err error) *attempt {
	if err == nil {
		return nil
	}
	return &attempt{err: networkErr("write: %s", err), retry: true, ambiguous: true}
}

// onSocket runs one operation on the client's own websocket under the
// retry policy: each attempt bounded by the attempt timeout, and a
// connection that failed in a way worth retrying dropped before the next.
func (c *Client) onSocket(ctx context.Context, mode retryMode, once func(context.Context) *attempt) error {
	c.wsMu.Lock()
	defer c.wsMu.Unlock()
	return errOrNil(retry(ctx, mode, func(ctx context.Context) *attempt {
		ctx, cancel := c.attemptContext(ctx)
		defer cancel()
		ae := once(ctx)
		if ae != nil && ae.retry {
			c.drop()
		}
		return ae
	}))
}

// wsQuery sends one REQ with the filters and collects events until EOSE.
func (c *Client) wsQuery(ctx context.Context, filters []Filter) ([]*nostr.Event, error) {
	var out []*nostr.Event
	err := c.onSocket(ctx, retryRead, func(ctx context.Context) *attempt {
		out = out[:0]
		return c.wsQueryOnce(ctx, filters, func(ev *nostr.Event) { out = append(out, ev) })
	})
	return out, err
}

func (c *Client) wsQueryOnce(ctx context.Context, filters []Filter, fn func(*nostr.Event)) *attempt {
	w, ae := c.dial(ctx)
	if ae != nil {
		return ae
	}
	c.subs++
	sub := "q" + strconv.Itoa(c.subs)
	frame := []any{"REQ", sub}
	for _, f := range filters {
		frame = append(frame, f)
	}
	r := &request{w: w, frame: frame}
	if ae := r.send(ctx); ae != nil {
		return ae
	}
	for {
		env, ae := r.next(ctx)
		if ae != nil {
			return ae
		}
		switch e := env.(type) {
		case *nostr.EventEnvelope:
			if e.SubscriptionID != nil && *e.SubscriptionID == sub {
				ev := e.Event
				fn(&ev)
			}
		case *nostr.EOSEEnvelope:
			if string(*e) == sub {
				send(ctx, w, []any{"CLOSE", sub})
				return nil
			}
		case *nostr.ClosedEnvelope:
			if e.SubscriptionID != sub {
				continue
			}
			if ae, goesOn := r.refused(ctx, e.Reason, c.opt.Key != nil, "query"); !goesOn {
				return ae
			}
		}
	}
}

// wsCount sends one COUNT with the filters and waits for its answer.
func (c *Client) wsCount(ctx context.Context, filters []Filter) (int64, error) {
	var n int64
	err := c.onSocket(ctx, retryRead, func(ctx context.Context) *attempt {
		var ae *attempt
		n, ae = c.wsCountOnce(ctx, filters)
		return ae
	})
	return n, err
}

func (c *Client) wsCountOnce(ctx context.Context, filters []Filter) (int64, *attempt) {
	w, ae := c.dial(ctx)
	if ae != nil {
		return 0, ae
	}
	c.subs++
	sub := "c" + strconv.Itoa(c.subs)
	r := &request{w: w, frame: countFrame(sub, filters)}
	if ae := r.send(ctx); ae != nil {
		return 0, ae
	}
	for {
		env, ae := r.next(ctx)
		if ae != nil {
			return 0, ae
		}
		switch e := env.(type) {
		case *nostr.CountEnvelope:
			if e.SubscriptionID == sub {
				if e.Count == nil {
					return 0, fatal(otherErr("relay answered COUNT without a count"))
				}
				return *e.Count, nil
			}
		case *nostr.ClosedEnvelope:
			if e.SubscriptionID != sub {
				continue
			}
			if ae, goesOn := r.refused(ctx, e.Reason, c.opt.Key != nil, "count"); !goesOn {
				return 0, ae
			}
		}
	}
}

// countFrame is ["COUNT", id, filters...] (NIP-45).
func countFrame(id string, filters []Filter) []any {
	frame := []any{"COUNT", id}
	for _, f := range filters {
		frame = append(frame, f)
	}
	return frame
}

// wsPublish sends ["EVENT", ev] and waits for its OK. The same signed
// event is re-sent on a retry, never a re-signed copy.
func (c *Client) wsPublish(ctx context.Context, ev *nostr.Event) (Result, error) {
	if c.opt.WriteCap > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opt.WriteCap)
		defer cancel()
	}
	var res Result
	err := c.onSocket(ctx, writeMode(ev.Kind), func(ctx context.Context) *attempt {
		var ae *attempt
		res, ae = c.wsPublishOnce(ctx, ev)
		return ae
	})
	return res, err
}

func (c *Client) wsPublishOnce(ctx context.Context, ev *nostr.Event) (Result, *attempt) {
	w, ae := c.dial(ctx)
	if ae != nil {
		return Result{}, ae
	}
	r := &request{w: w, frame: []any{"EVENT", ev}}
	if ae := r.send(ctx); ae != nil {
		return Result{}, ae
	}
	for {
		env, ae := r.next(ctx)
		if ae != nil {
			return Result{}, ae
		}
		ok, isOK := env.(*nostr.OKEnvelope)
		if !isOK || ok.EventID != ev.ID {
			continue
		}
		if ok.OK || ephemeral(ev.Kind) && strings.HasPrefix(ok.Reason, "mute:") {
			// mute: an ephemeral event nobody was subscribed to, delivered
			// to all zero listeners.
			return Result{EventID: ev.ID, Accepted: true, Message: ok.Reason}, nil
		}
		if ae, goesOn := r.refused(ctx, ok.Reason, c.opt.Key != nil, "event"); !goesOn {
			return Result{}, ae
		}
	}
}

// Info is what the last successful Probe read; zero before one.
func (c *Client) Info() Info {
	c.probeMu.Lock()
	defer c.probeMu.Unlock()
	return c.info
}
