package relayclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// ConnOptions configures a websocket connection. The zero value is an
// anonymous connection on net/http's default client.
type ConnOptions struct {
	// Key answers NIP-42 challenges; nil never authenticates.
	Key *nostrkey.Secret
	// AuthTag is the NIP-OA tag added to every AUTH event; nil none.
	AuthTag nostr.Tag
	// HTTPClient dials; nil is http.DefaultClient.
	HTTPClient *http.Client
	// WriteTimeout bounds one write once started; 0 is DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// Conn is one NIP-01 websocket session with a relay: frames in and out,
// NIP-42 challenges answered as they arrive, pings. Write, Ping and Close
// may be called from any goroutine; Read and Login from one at a time,
// which then owns the login state.
type Conn struct {
	url string
	ws  *websocket.Conn
	opt ConnOptions
	// Login state, owned by the reading goroutine.
	challenge string
	authID    string // id of the AUTH event awaiting its OK; "" none
	authed    bool
}

// DialError is a failed websocket dial; Status is the HTTP status of a
// refused upgrade, 0 when there was no answer.
type DialError struct {
	Status int
	Err    error
}

func (e *DialError) Error() string { return e.Err.Error() }
func (e *DialError) Unwrap() error { return e.Err }

// Permanent reports whether the relay refused the upgrade in a way
// retrying cannot fix (a 4xx other than 408 and 429).
func (e *DialError) Permanent() bool {
	return e.Status != 0 && e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests && e.Status < 500
}

// AuthRefusedError is the relay's OK false to our AUTH.
type AuthRefusedError struct{ Reason string }

func (e *AuthRefusedError) Error() string { return "auth refused: " + e.Reason }

// Temporary reports whether the relay blamed itself ("error: …"), so a
// new connection may log in.
func (e *AuthRefusedError) Temporary() bool { return hasPrefix(e.Reason, "error:") }

// Dial opens a websocket to url (ws:// or wss://) with frames capped at
// MaxFrameBytes.
func Dial(ctx context.Context, url string, opt ConnOptions) (*Conn, error) {
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: opt.HTTPClient})
	if err != nil {
		de := &DialError{Err: err}
		if resp != nil {
			de.Status = resp.StatusCode
		}
		return nil, de
	}
	ws.SetReadLimit(MaxFrameBytes)
	if opt.WriteTimeout <= 0 {
		opt.WriteTimeout = DefaultWriteTimeout
	}
	return &Conn{url: url, ws: ws, opt: opt}, nil
}

// URL is the websocket URL the connection was dialled with.
func (c *Conn) URL() string { return c.url }

// Authed reports whether the relay accepted our AUTH.
func (c *Conn) Authed() bool { return c.authed }

// Challenged reports whether the relay has sent a challenge we can answer.
func (c *Conn) Challenged() bool { return c.challenge != "" }

// Authenticating reports whether our AUTH awaits its OK.
func (c *Conn) Authenticating() bool { return c.authID != "" }

// Read returns the next envelope, nil for a frame that is no known
// envelope. A challenge is answered (once per challenge, when no AUTH is
// underway) and the OK for our AUTH consumed here, both as nil envelopes;
// a refused AUTH is an *AuthRefusedError. ctx ending closes the
// connection, as coder/websocket does.
func (c *Conn) Read(ctx context.Context) (nostr.Envelope, error) {
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	env, err := nostr.NewMessageParser().ParseMessage(string(b))
	if err != nil {
		return nil, nil // a frame we do not understand is skipped
	}
	switch e := env.(type) {
	case *nostr.AuthEnvelope:
		if e.Challenge == nil || len(*e.Challenge) > maxChallengeBytes || c.opt.Key == nil {
			return nil, nil
		}
		fresh := *e.Challenge != c.challenge
		c.challenge = *e.Challenge
		if c.authID == "" && (!c.authed || fresh) {
			return nil, c.Authenticate(ctx)
		}
		return nil, nil
	case *nostr.OKEnvelope:
		if c.authID != "" && e.EventID == c.authID {
			c.authID = ""
			c.authed = e.OK
			if !e.OK {
				return nil, &AuthRefusedError{Reason: e.Reason}
			}
			return nil, nil
		}
	}
	return env, nil
}

// Authenticate answers the last challenge with a kind 22242 event naming
// the connection's URL, carrying the NIP-OA tag when configured.
func (c *Conn) Authenticate(ctx context.Context) error {
	ev := nostr.Event{Kind: workspace.KindAuth, CreatedAt: nostr.Now(),
		Tags: nostr.Tags{{workspace.TagAuthRelay, c.url}, {workspace.TagAuthChallenge, c.challenge}}}
	if c.opt.AuthTag != nil {
		ev.Tags = append(ev.Tags, c.opt.AuthTag)
	}
	if err := c.opt.Key.SignEvent(&ev); err != nil {
		return fmt.Errorf("sign AUTH event: %w", err)
	}
	c.authID = ev.ID
	return c.WriteFrame(ctx, "AUTH", ev)
}

// Login waits for the relay's challenge and for the OK to our answer, and
// returns the envelopes that came meanwhile. wait > 0 bounds each of the
// two waits; otherwise ctx alone does.
func (c *Conn) Login(ctx context.Context, wait time.Duration) ([]nostr.Envelope, error) {
	var pending []nostr.Envelope
	for _, phase := range []struct {
		done func() bool
		late string
	}{
		{c.Challenged, "no AUTH challenge from relay within %s"},
		{func() bool { return !c.Authenticating() }, "no OK for AUTH within %s"},
	} {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if wait > 0 {
			pctx, cancel = context.WithTimeout(ctx, wait)
		}
		for !phase.done() {
			env, err := c.Read(pctx)
			if err != nil {
				late := pctx.Err() != nil && ctx.Err() == nil
				cancel()
				if late {
					return nil, fmt.Errorf(phase.late, wait)
				}
				return nil, err
			}
			if env != nil {
				pending = append(pending, env)
			}
		}
		cancel()
	}
	return pending, nil
}

// Write sends one text frame. Once started, a write is bounded by the
// write timeout and ctx's deadline, not by ctx's cancellation:
// coder/websocket closes the whole socket when a write's context ends,
// even while the write still waits for another writer, which would drop
// every subscription for one abandoned write. A failed write closes the
// connection.
func (c *Conn) Write(ctx context.Context, b []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := c.opt.WriteTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	if err := c.ws.Write(wctx, websocket.MessageText, b); err != nil {
		c.ws.CloseNow()
		return err
	}
	return nil
}

// WriteFrame sends [label, values...] as one frame.
func (c *Conn) WriteFrame(ctx context.Context, label string, values ...any) error {
	b, err := json.Marshal(append([]any{label}, values...))
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", label, err)
	}
	return c.Write(ctx, b)
}

// KeepAlive pings every interval until ctx ends; a ping without a pong
// within timeout closes the connection and is returned.
func (c *Conn) KeepAlive(ctx context.Context, interval, timeout time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, timeout)
			err := c.ws.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				c.ws.CloseNow()
				return fmt.Errorf("ping: %w", err)
			}
		}
	}
}

// Close says goodbye with a normal closure.
func (c *Conn) Close() error { return c.ws.Close(websocket.StatusNormalClosure, "") }

// CloseNow drops the connection at once.
func (c *Conn) CloseNow() error { return c.ws.CloseNow() }

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// errNotConnected: a subscriber has no live socket right now.
var errNotConnected = errors.New("not connected")
