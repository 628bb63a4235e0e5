package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Provider names one HTTP dialect family.
type Provider string

// Providers, spelled as BUZZ_AGENT_PROVIDER accepts them.
const (
	Anthropic    Provider = "anthropic"
	OpenAI       Provider = "openai"
	OpenRouter   Provider = "openrouter"
	Databricks   Provider = "databricks"
	DatabricksV2 Provider = "databricks_v2"
)

// API choices for the openai provider (OPENAI_COMPAT_API).
const (
	APIAuto      = "auto"
	APIChat      = "chat"
	APIResponses = "responses"
)

// Config configures a Client. Zero durations take the documented defaults.
type Config struct {
	Provider Provider
	// BaseURL is the API root; a trailing slash is ignored. For Databricks
	// it is DATABRICKS_HOST.
	BaseURL string
	// APIKey is the key or bearer token. Never logged.
	APIKey string
	// APIVersion is Anthropic's anthropic-version header value.
	APIVersion string
	// API picks the openai dialect: auto, chat or responses. Empty is auto.
	API string
	// MaxOutputTokens is the per-call output cap.
	MaxOutputTokens int
	// Effort is the reasoning effort level; empty sends none.
	Effort string
	// PromptCaching adds Anthropic-style cache_control breakpoints.
	PromptCaching bool
	// NoStream sends one non-streamed POST per round instead of SSE.
	NoStream bool
	// IdleTimeout bounds silence in one attempt: until the response headers,
	// then between progress events (a content, reasoning, tool-call or usage
	// delta of a stream; any byte of a plain reply). Keep-alives (SSE
	// comments, Anthropic ping, empty chunks) are not progress. Zero means
	// 240 s.
	IdleTimeout time.Duration
	// MaxCallTime bounds one call's wall-clock time, retries included, however
	// much the endpoint keeps sending. Zero means 600 s.
	MaxCallTime time.Duration
	// IdleSetting and MaxCallSetting name the settings that change the two
	// bounds (BUZZ_AGENT_LLM_TIMEOUT_SECS, BUZZ_AGENT_LLM_MAX_CALL_SECS), for
	// the errors that report them. Empty names none.
	IdleSetting, MaxCallSetting string
	// RetryBase replaces the 500 ms first backoff (tests shorten it).
	RetryBase time.Duration
	// RetryAfterCap replaces the 60 s Retry-After ceiling (tests shorten it).
	RetryAfterCap time.Duration
	// Logger receives warnings; nil discards.
	Logger *slog.Logger
	// HTTP replaces the default HTTP client (tests); nil builds one.
	HTTP *http.Client
}

// Client sends completion requests for one provider. It is safe for
// concurrent use.
type Client struct {
	cfg  Config
	http *http.Client
	log  *slog.Logger
	// upgraded is the process-wide sticky switch from Chat to Responses in
	// auto mode after an endpoint said to use the Responses API.
	upgraded atomic.Bool
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 240 * time.Second
	}
	if cfg.MaxCallTime <= 0 {
		cfg.MaxCallTime = defaultMaxCallTime
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = retryBase
	}
	if cfg.RetryAfterCap <= 0 {
		cfg.RetryAfterCap = retryAfterCap
	}
	if cfg.API == "" {
		cfg.API = APIAuto
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	hc := cfg.HTTP
	if hc == nil {
		tr := &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: connectTimeout, KeepAlive: tcpKeepAlive}).DialContext,
			TLSHandshakeTimeout: connectTimeout,
			MaxIdleConnsPerHost: maxIdlePerHost,
			IdleConnTimeout:     idleConnTimeout,
		}
		hc = &http.Client{Transport: tr}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, http: hc, log: log}
}

// Close drops idle keep-alive connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// dialect is one wire format: how to address it, build its body and read
// its reply.
type dialect interface {
	url(c *Client, model string) string
	body(c *Client, req *Request, stream bool) ([]byte, error)
	summaryBody(c *Client, model, system, user string) ([]byte, error)
	parse(data []byte) (*Response, error)
	stream(sr *sseReader, req *Request) (*Response, error)
	headers(c *Client, h http.Header)
}

// usesResponses reports whether the openai provider talks Responses now.
func (c *Client) usesResponses() bool {
	switch c.cfg.API {
	case APIResponses:
		return true
	case APIChat:
		return false
	}
	if c.upgraded.Load() {
		return true
	}
	return isOpenAIHost(c.cfg.BaseURL)
}

// isOpenAIHost reports whether base's host is api.openai.com or a subdomain
// of openai.com, parsed so that lookalikes such as openai.com.evil do not pass.
func isOpenAIHost(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return h == "api.openai.com" || strings.HasSuffix(h, ".openai.com")
}

func (c *Client) dialect(model string) dialect {
	switch c.cfg.Provider {
	case Anthropic:
		return anthropicDialect{}
	case OpenRouter:
		return chatDialect{openRouter: true}
	case Databricks:
		return chatDialect{databricks: true}
	case DatabricksV2:
		return databricksV2Route(model)
	}
	if c.usesResponses() {
		return responsesDialect{}
	}
	return chatDialect{}
}

// Complete runs one completion call with retries and returns the assembled
// reply. Text and reasoning go to req.OnText/OnThought as they arrive.
func (c *Client) Complete(ctx context.Context, req *Request) (*Response, error) {
	d := c.dialect(req.Model)
	resp, err := c.complete(ctx, d, req)
	if err == nil || c.cfg.Provider != OpenAI || c.cfg.API != APIAuto {
		return resp, err
	}
	if _, isChat := d.(chatDialect); !isChat || !wantsResponses(err) {
		return resp, err
	}
	c.upgraded.Store(true)
	c.log.Warn("endpoint asked for the Responses API; switching for the rest of the process")
	return c.complete(ctx, responsesDialect{}, req)
}

// wantsResponses reports whether a Chat error says to use Responses.
func wantsResponses(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	m := strings.ToLower(e.Msg)
	return strings.Contains(m, "/v1/responses") || strings.Contains(m, "responses api instead") ||
		strings.Contains(m, "use the responses api")
}

func (c *Client) complete(ctx context.Context, d dialect, req *Request) (*Response, error) {
	stream := !c.cfg.NoStream
	body, err := d.body(c, req, stream)
	if err != nil {
		return nil, err
	}
	var resp *Response
	err = c.post(ctx, d, d.url(c, req.Model), body, func(r io.Reader, isStream bool, progress func()) (bool, error) {
		if isStream {
			sr := newSSEReader(r)
			sr.progress = progress
			forwarded := false
			sub := *req
			sub.OnText = func(s string) {
				forwarded = true
				if req.OnText != nil {
					req.OnText(s)
				}
			}
			sub.OnThought = func(s string) {
				forwarded = true
				if req.OnThought != nil {
					req.OnThought(s)
				}
			}
			out, err := d.stream(sr, &sub)
			if err != nil {
				return !forwarded, err
			}
			out.Streamed = true
			resp = out
			return false, nil
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return false, err
		}
		out, err := d.parse(data)
		if err != nil {
			return false, err
		}
		resp = out
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	calls, err := fixCalls(resp.Calls)
	if err != nil {
		return nil, err
	}
	resp.Calls = calls
	return resp, nil
}

// Summarize asks model for a plain-text reply to user under system, without
// tools, streaming or reasoning. Used for context handoffs.
func (c *Client) Summarize(ctx context.Context, model, system, user string) (string, error) {
	d := c.dialect(model)
	if _, ok := d.(chatDialect); ok && c.cfg.Provider == OpenAI && c.usesResponses() {
		d = responsesDialect{}
	}
	body, err := d.summaryBody(c, model, system, user)
	if err != nil {
		return "", err
	}
	var text string
	err = c.post(ctx, d, d.url(c, model), body, func(r io.Reader, _ bool, _ func()) (bool, error) {
		data, err := io.ReadAll(r)
		if err != nil {
			return false, err
		}
		out, err := d.parse(data)
		if err != nil {
			return false, err
		}
		text = out.Text
		return false, nil
	})
	return text, err
}

// readFunc consumes a 2xx body. It returns retry=true when the failure
// happened before anything reached the caller, so another attempt is safe.
// A stream reader calls progress for each event that carries progress (the
// idle timeout counts only those); a plain body's bytes count by themselves.
type readFunc func(r io.Reader, stream bool, progress func()) (retry bool, err error)

// post sends body with the retry policy and hands a 2xx body to read. The
// whole call, retries included, is bounded by MaxCallTime.
func (c *Client) post(ctx context.Context, d dialect, target string, body []byte, read readFunc) error {
	ctx, cancel := context.WithTimeoutCause(ctx, c.cfg.MaxCallTime, errMaxCall)
	defer cancel()
	start := time.Now()
	var last *Error
	authRetried := false
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if attempt > 0 {
			delay := c.backoff(attempt)
			if last != nil && last.retryAfter > 0 {
				delay = min(time.Duration(last.retryAfter)*time.Second, c.cfg.RetryAfterCap)
			}
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return c.ended(ctx)
			case <-t.C:
			}
		}
		e := c.attempt(ctx, d, target, body, read)
		if e == nil {
			return nil
		}
		if ctx.Err() != nil {
			return c.ended(ctx)
		}
		if e.Kind == KindAuth && c.bearer() && !authRetried && attempt+1 < maxAttempts {
			// A bearer token is refreshed once per call on 401/403; a static
			// key refreshes to itself, so one identical retry happens.
			authRetried = true
			last = &Error{}
			attempt-- // the refresh retry does not count as a transport retry
			continue
		}
		if !e.retryable {
			return e
		}
		last = e
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	if elapsed >= stallNotice {
		c.log.Warn("llm retries stalled", "elapsed", elapsed)
	}
	if c.cfg.Provider == OpenRouter && last.Status == http.StatusTooManyRequests {
		return &Error{Status: last.Status, Msg: "rate limited: " + last.bodyText()}
	}
	if c.cfg.Provider == OpenRouter && last.Status == http.StatusServiceUnavailable && last.retryAfter == 0 {
		return &Error{Status: last.Status, Msg: paramRoutingMsg + ": " + last.bodyText()}
	}
	plural := "s"
	return &Error{Kind: last.Kind, Status: last.Status, Msg: fmt.Sprintf("exhausted retries: %s (cumulative %s, %d attempt%s)", last.Msg, elapsed, maxAttempts, plural), retryable: true}
}

// errMaxCall is the cause set when a call ran past MaxCallTime.
var errMaxCall = errors.New("llm call wall-clock cap")

// ended is the error of a call whose ctx ended: the caller's own
// cancellation as is, the wall-clock cap as an *Error naming it.
func (c *Client) ended(ctx context.Context) error {
	if context.Cause(ctx) != errMaxCall {
		return ctx.Err()
	}
	msg := fmt.Sprintf("call ran past its wall-clock cap of %s without finishing", c.cfg.MaxCallTime)
	if c.cfg.MaxCallSetting != "" {
		msg += fmt.Sprintf("; set %s to allow longer calls", c.cfg.MaxCallSetting)
	}
	return &Error{Msg: msg}
}

// idleMsg is the text of an attempt ended by the inactivity timeout.
func (c *Client) idleMsg() string {
	msg := fmt.Sprintf("transport: no progress from the endpoint within the inactivity timeout (%s)", c.cfg.IdleTimeout)
	if c.cfg.IdleSetting != "" {
		msg += fmt.Sprintf("; keep-alives do not count; set %s to wait longer", c.cfg.IdleSetting)
	}
	return msg
}

func (e *Error) bodyText() string {
	_, after, ok := strings.Cut(e.Msg, ": ")
	if !ok {
		return e.Msg
	}
	return after
}

const paramRoutingMsg = "no OpenRouter endpoint supports the requested parameters — remove the reasoning effort or pick another model"

// bearer reports whether the provider authenticates with a refreshable
// bearer token.
func (c *Client) bearer() bool {
	return c.cfg.Provider == OpenAI || c.cfg.Provider == Databricks || c.cfg.Provider == DatabricksV2
}

func (c *Client) backoff(attempt int) time.Duration {
	base := min(c.cfg.RetryBase<<(attempt-1), retryCap)
	half := base / 2
	return half + rand.N(half+1)
}

// attempt sends one request and classifies the outcome.
func (c *Client) attempt(ctx context.Context, d dialect, target string, body []byte, read readFunc) *Error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(c.cfg.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()

	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return errorf("request: %v", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	d.headers(c, hreq.Header)
	resp, err := c.http.Do(hreq)
	if err != nil {
		return c.transportErr(ctx, err)
	}
	defer resp.Body.Close()
	r := &idleReader{r: resp.Body, t: idle, d: c.cfg.IdleTimeout, bytes: true}

	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(r, maxErrorBodyBytes))
		return c.statusErr(resp, strings.TrimSpace(string(data)))
	}
	if resp.ContentLength > maxResponseBytes {
		return errorf("response too large: %d bytes > %d", resp.ContentLength, maxResponseBytes)
	}
	isStream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	// A stream's bytes may be keep-alives only; there the reader reports
	// progress itself.
	r.bytes = !isStream
	lr := &capReader{r: r, left: maxResponseBytes}
	retry, err := read(lr, isStream, func() { idle.Reset(c.cfg.IdleTimeout) })
	if err == nil {
		return nil
	}
	var le *Error
	if errors.As(err, &le) {
		// An in-band retryable error (Anthropic overloaded_error) may only be
		// retried while nothing has reached the caller.
		if le.retryable && !retry {
			cp := *le
			cp.retryable = false
			return &cp
		}
		return le
	}
	if errors.Is(err, errTooLarge) {
		return errorf("response exceeded %d bytes", maxResponseBytes)
	}
	if cause := context.Cause(ctx); cause == errIdle {
		return &Error{Msg: c.idleMsg(), retryable: retry}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || isNetErr(err) {
		return &Error{Msg: "transport: " + err.Error(), retryable: retry}
	}
	return errorf("%v", err)
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

func (c *Client) transportErr(ctx context.Context, err error) *Error {
	if context.Cause(ctx) == errIdle {
		return &Error{Msg: c.idleMsg(), retryable: true}
	}
	e := &Error{Msg: "transport: " + err.Error(), retryable: true}
	if dialFailed(err) {
		e.Kind = KindUnreachable
	}
	return e
}

// dialFailed reports whether err is a failure to connect (refused, no
// route, no such host, connect timeout) rather than one after the request
// was sent.
func dialFailed(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// statusErr classifies a non-2xx reply.
func (c *Client) statusErr(resp *http.Response, body string) *Error {
	st := resp.StatusCode
	msg := fmt.Sprintf("%d: %s", st, body)
	if c.cfg.Provider == OpenRouter {
		switch {
		case st == http.StatusUnauthorized:
			return &Error{Kind: KindAuth, Status: st, Msg: "401: static key rejected — update key in agent settings"}
		case st == http.StatusForbidden:
			return &Error{Status: st, Msg: msg}
		case st == http.StatusPaymentRequired:
			return &Error{Status: st, Msg: "OpenRouter credits exhausted — check https://openrouter.ai/credits"}
		case st == http.StatusNotFound && strings.Contains(body, "No endpoints found that can handle the requested parameters"):
			return &Error{Status: st, Msg: paramRoutingMsg + ": " + body}
		case st == http.StatusTooManyRequests || (st == http.StatusServiceUnavailable && strings.Contains(body, `"provider_overloaded"`)):
			return &Error{Status: st, Msg: msg, retryable: true, retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"))}
		}
	}
	switch {
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return &Error{Kind: KindAuth, Status: st, Msg: msg}
	case st == http.StatusNotFound:
		return &Error{Kind: KindNotFound, Status: st, Msg: "404 model or route not found: " + body}
	case st >= 500 || st == http.StatusTooManyRequests || st == 499:
		return &Error{Status: st, Msg: msg, retryable: true}
	case st == http.StatusBadRequest && contextWindowBody(body):
		return &Error{Kind: KindContextWindow, Status: st, Msg: msg}
	case st == http.StatusBadRequest && strings.Contains(body, `"model_not_found"`):
		// OpenAI-compatible servers answer an unknown model with 400
		// and code model_not_found.
		return &Error{Kind: KindNotFound, Status: st, Msg: msg}
	}
	return &Error{Status: st, Msg: msg}
}

// contextWindowBody reports whether a 400 body says the prompt is over the
// model's context window, in any of the wordings providers use.
func contextWindowBody(body string) bool {
	b := strings.ToLower(body)
	for _, w := range []string{"context_length_exceeded", "maximum context length", "context window", "prompt is too long"} {
		if strings.Contains(b, w) {
			return true
		}
	}
	return false
}

// parseRetryAfter reads a Retry-After of whole seconds; 0, negative and
// non-numeric values (HTTP dates included) are ignored.
func parseRetryAfter(v string) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// idleReader resets the inactivity timer whenever bytes arrive, while bytes
// is set, so the timeout bounds silence, not the whole reply.
type idleReader struct {
	r     io.Reader
	t     *time.Timer
	d     time.Duration
	bytes bool // bytes count as progress (not for a stream)
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 && ir.bytes {
		ir.t.Reset(ir.d)
	}
	return n, err
}

var errTooLarge = errors.New("response too large")

// capReader fails once more than left bytes have been read.
type capReader struct {
	r    io.Reader
	left int64
}

func (cr *capReader) Read(p []byte) (int, error) {
	if cr.left <= 0 {
		// Probe: a clean EOF at exactly the cap is fine.
		var one [1]byte
		n, err := cr.r.Read(one[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > cr.left {
		p = p[:cr.left]
	}
	n, err := cr.r.Read(p)
	cr.left -= int64(n)
	return n, err
}
