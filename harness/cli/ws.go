package cli

import (
	"buzzbox/internal/workspace"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// wsConn is one NIP-01 websocket session, driven synchronously: every
// operation writes its frame and then reads until its answer arrives,
// answering NIP-42 AUTH challenges on the way. No goroutines.
type wsConn struct {
	c         *client
	conn      *websocket.Conn
	challenge string
	authID    string // id of the AUTH event awaiting OK; "" if none
	authed    bool
	authErr   string // the relay refused our AUTH with this reason
	subs      int
}

// dial opens the websocket; a relay that says auth_required in NIP-11 is
// given the chance to send its challenge and is answered before any
// request, which saves a refused round trip.
func (c *client) dial(ctx context.Context) (*wsConn, *attemptErr) {
	if c.ws != nil {
		return c.ws, nil
	}
	dctx, cancel := context.WithTimeout(ctx, c.connect)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, c.wsURL(), &websocket.DialOptions{HTTPClient: c.httpc})
	if err != nil {
		return nil, &attemptErr{err: &Error{Category: catNetwork, Message: "network error: connect " + c.wsURL() + ": " + err.Error(), Retryable: true}, retry: true}
	}
	conn.SetReadLimit(maxWSMessageBytes)
	w := &wsConn{c: c, conn: conn}
	if c.authRequired && c.key != nil {
		for w.challenge == "" || w.authID != "" {
			if _, ae := w.read(dctx); ae != nil {
				w.close()
				return nil, ae
			}
			if w.authErr != "" {
				w.close()
				return nil, fatal(authErr("relay refused AUTH: %s", w.authErr))
			}
		}
	}
	c.ws = w
	return w, nil
}

func (w *wsConn) close() {
	w.conn.Close(websocket.StatusNormalClosure, "")
}

// drop forgets a broken connection so the next attempt dials again.
func (c *client) drop() {
	if c.ws != nil {
		c.ws.conn.CloseNow()
		c.ws = nil
	}
}

func (w *wsConn) send(ctx context.Context, frame []any) *attemptErr {
	b, err := json.Marshal(frame)
	if err != nil {
		return fatal(otherErr("encode frame: %v", err))
	}
	if err := w.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return &attemptErr{err: &Error{Category: catNetwork, Message: "network error: write: " + err.Error(), Retryable: true}, retry: true, ambiguous: true}
	}
	return nil
}

// read returns the next envelope. AUTH challenges and the OK for our AUTH
// are consumed here (and reported as nil envelopes).
func (w *wsConn) read(ctx context.Context) (nostr.Envelope, *attemptErr) {
	_, b, err := w.conn.Read(ctx)
	if err != nil {
		return nil, &attemptErr{err: &Error{Category: catNetwork, Message: "network error: read: " + err.Error(), Retryable: true}, retry: true, ambiguous: true}
	}
	env, err := nostr.NewMessageParser().ParseMessage(string(b))
	if err != nil {
		return nil, nil // a frame we do not understand is skipped
	}
	switch e := env.(type) {
	case *nostr.AuthEnvelope:
		if e.Challenge == nil || len(*e.Challenge) > maxChallengeBytes || w.c.key == nil {
			return nil, nil
		}
		w.challenge = *e.Challenge
		if !w.authed && w.authID == "" {
			return nil, w.authenticate(ctx)
		}
		return nil, nil
	case *nostr.OKEnvelope:
		if w.authID != "" && e.EventID == w.authID {
			w.authID = ""
			w.authed = e.OK
			if !e.OK {
				w.authErr = e.Reason
			}
			return nil, nil
		}
	}
	return env, nil
}

// authenticate answers the challenge with a kind 22242 event.
func (w *wsConn) authenticate(ctx context.Context) *attemptErr {
	ev := nostr.Event{Kind: workspace.KindAuth, Content: "",
		Tags: nostr.Tags{{workspace.TagAuthRelay, w.c.wsURL()}, {workspace.TagAuthChallenge, w.challenge}}}
	if err := w.c.sign(&ev); err != nil {
		return fatal(asError(err))
	}
	w.authID = ev.ID
	return w.send(ctx, []any{"AUTH", ev})
}

// authRefusal is whether a CLOSED/OK reason means "log in first".
func authRefusal(reason string) bool { return strings.HasPrefix(reason, "auth-required:") }

// awaitingAuth reports whether an AUTH is underway, so a refused request
// should be sent again once it succeeds.
func (w *wsConn) awaitingAuth() bool { return !w.authed && w.authErr == "" && w.c.key != nil }

// wsQuery sends one REQ with the filters and collects events until EOSE.
func (c *client) wsQuery(ctx context.Context, filters []filter) ([]*nostr.Event, error) {
	var out []*nostr.Event
	err := retry(ctx, false, func(ctx context.Context) *attemptErr {
		out = out[:0]
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		ae := c.wsQueryOnce(ctx, filters, func(ev *nostr.Event) { out = append(out, ev) })
		if ae != nil && ae.retry {
			c.drop()
		}
		return ae
	})
	return out, err
}

func (c *client) wsQueryOnce(ctx context.Context, filters []filter, fn func(*nostr.Event)) *attemptErr {
	w, ae := c.dial(ctx)
	if ae != nil {
		return ae
	}
	w.subs++
	sub := "q" + strconv.Itoa(w.subs)
	req := []any{"REQ", sub}
	for _, f := range filters {
		req = append(req, f)
	}
	// sentAuthed records whether the REQ went out after AUTH succeeded: a
	// refusal of a REQ sent before may arrive after our AUTH's OK, and then
	// the REQ is sent once more.
	sentAuthed := w.authed
	if ae := w.send(ctx, req); ae != nil {
		return ae
	}
	resend, retried := false, false
	for {
		env, ae := w.read(ctx)
		if ae != nil {
			return ae
		}
		if w.authErr != "" {
			return fatal(authErr("relay refused AUTH: %s", w.authErr))
		}
		if resend && w.authed {
			resend = false
			if ae := w.send(ctx, req); ae != nil {
				return ae
			}
		}
		switch e := env.(type) {
		case *nostr.EventEnvelope:
			if e.SubscriptionID != nil && *e.SubscriptionID == sub {
				ev := e.Event
				fn(&ev)
			}
		case *nostr.EOSEEnvelope:
			if string(*e) == sub {
				w.send(ctx, []any{"CLOSE", sub})
				return nil
			}
		case *nostr.ClosedEnvelope:
			if e.SubscriptionID != sub {
				continue
			}
			switch {
			case authRefusal(e.Reason) && !retried && (w.awaitingAuth() || (w.authed && !sentAuthed)):
				retried = true
				if w.authed {
					if ae := w.send(ctx, req); ae != nil {
						return ae
					}
					continue
				}
				resend = true
				if w.authID == "" && w.challenge != "" {
					if ae := w.authenticate(ctx); ae != nil {
						return ae
					}
				}
			case authRefusal(e.Reason) || strings.HasPrefix(e.Reason, "restricted:"):
				return fatal(authErr("relay refused the query: %s", e.Reason))
			default:
				return fatal(relayErr(http.StatusBadRequest, e.Reason, false))
			}
		}
	}
}

// wsPublish sends ["EVENT", ev] and waits for its OK. The same signed
// event is re-sent on a retry, never a re-signed copy.
func (c *client) wsPublish(ctx context.Context, ev *nostr.Event) (writeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, wsWriteCap)
	defer cancel()
	mode := retryWrite
	if ev.Kind >= 9040 && ev.Kind <= 9044 {
		mode = retryModeration
	}
	var res writeResult
	err := retryWith(ctx, mode, func(ctx context.Context) *attemptErr {
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		var ae *attemptErr
		res, ae = c.wsPublishOnce(ctx, ev)
		if ae != nil && ae.retry {
			c.drop()
		}
		return ae
	})
	return res, err
}

func (c *client) wsPublishOnce(ctx context.Context, ev *nostr.Event) (writeResult, *attemptErr) {
	w, ae := c.dial(ctx)
	if ae != nil {
		return writeResult{}, ae
	}
	frame := []any{"EVENT", ev}
	sentAuthed := w.authed // as in wsQueryOnce
	if ae := w.send(ctx, frame); ae != nil {
		return writeResult{}, ae
	}
	resend, retried := false, false
	for {
		env, ae := w.read(ctx)
		if ae != nil {
			return writeResult{}, ae
		}
		if w.authErr != "" {
			return writeResult{}, fatal(authErr("relay refused AUTH: %s", w.authErr))
		}
		if resend && w.authed {
			resend = false
			if ae := w.send(ctx, frame); ae != nil {
				return writeResult{}, ae
			}
		}
		ok, isOK := env.(*nostr.OKEnvelope)
		if !isOK || ok.EventID != ev.ID {
			continue
		}
		switch {
		case ok.OK:
			return writeResult{EventID: ev.ID, Accepted: true, Message: ok.Reason}, nil
		case ev.Kind >= 20000 && ev.Kind < 30000 && strings.HasPrefix(ok.Reason, "mute:"):
			// An ephemeral event nobody was subscribed to: delivered to all zero listeners.
			return writeResult{EventID: ev.ID, Accepted: true, Message: ok.Reason}, nil
		case authRefusal(ok.Reason) && !retried && (w.awaitingAuth() || (w.authed && !sentAuthed)):
			retried = true
			if w.authed {
				if ae := w.send(ctx, frame); ae != nil {
					return writeResult{}, ae
				}
				continue
			}
			resend = true
			if w.authID == "" && w.challenge != "" {
				if ae := w.authenticate(ctx); ae != nil {
					return writeResult{}, ae
				}
			}
		case authRefusal(ok.Reason) || strings.HasPrefix(ok.Reason, "restricted:"):
			return writeResult{}, fatal(authErr("relay refused the event: %s", ok.Reason))
		default:
			return writeResult{}, fatal(relayErr(http.StatusBadRequest, fmt.Sprint(ok.Reason), false))
		}
	}
}
