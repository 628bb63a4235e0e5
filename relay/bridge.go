package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
	"buzzbox/internal/workspace/nipoa"

	"github.com/nbd-wtf/go-nostr"
)

// The HTTP bridge: POST /query (JSON array of filters → array of events),
// POST /count (→ {"count": n}) and POST /events (one signed event →
// {"event_id","accepted","message"}). Each request carries a NIP-98 token
// for its exact URL (on one of the relay's own names, see selfNames) and
// method with the body's SHA-256 (required with a body); a token is good
// once (replays get 401 "NIP-98: replay detected"). The access rules are
// the websocket's. Errors are {"error": "<text>"}.

// bridgeFilter is a NIP-01 filter plus the bridge's extensions.
type bridgeFilter struct {
	nostr.Filter
	BeforeID string // keyset cursor with Until: skip ids >= this at created_at == Until
}

func (f *bridgeFilter) UnmarshalJSON(b []byte) error {
	var ext struct {
		BeforeID string `json:"before_id"`
	}
	if err := json.Unmarshal(b, &ext); err != nil {
		return err
	}
	f.BeforeID = ext.BeforeID
	return f.Filter.UnmarshalJSON(b)
}

type bridgeError struct {
	status int
	msg    string
}

func (e *bridgeError) Error() string { return e.msg }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// httpScheme is the scheme NIP-98 tokens must name.
func (r *Relay) httpScheme(req *http.Request) string {
	if r.scheme(req) == "wss" {
		return "https"
	}
	return "http"
}

// expect returns what a NIP-98 token for req must match: a u tag naming
// one of the relay's own names (see selfNames) with the request's path,
// as pathURL joins them. Request headers never choose the names.
func (r *Relay) expect(req *http.Request, pathURL func(base string, req *http.Request) string) nip98.Expect {
	bases := r.names().bases(r.httpScheme(req))
	if len(bases) == 0 {
		return nip98.Expect{URL: "relay-not-listening:"}
	}
	want := nip98.Expect{URL: pathURL(bases[0], req)}
	for _, b := range bases[1:] {
		want.OtherURLs = append(want.OtherURLs, pathURL(b, req))
	}
	return want
}

// verifier checks the NIP-98 tokens of the bridge and NIP-86: each is
// good once, in this process (r.seen) and, with --db, across the
// instances sharing the database (claimShared).
func (r *Relay) verifier() nip98.Verifier {
	v := nip98.Verifier{Now: r.cfg.Now, Seen: r.seen}
	if r.fan != nil {
		v.Shared = r.claimShared
	}
	return v
}

// authenticate checks the NIP-98 token of a bridge request and the
// relay's access rules, returning the caller and the owner attestation
// it presented (nil when none). A request with a body must carry a
// payload tag hashing it.
func (r *Relay) authenticate(req *http.Request, body []byte) (caller, *nipoa.Tag, *bridgeError) {
	v := r.verifier()
	want := r.expect(req, nip98.PathURL)
	want.Method, want.Body, want.RequirePayload = req.Method, body, len(body) > 0
	res, err := v.Request(req, want)
	if err != nil {
		if r.cfg.Open && errors.Is(err, nip98.ErrNoToken) {
			return caller{}, nil, nil
		}
		if errors.Is(err, nip98.ErrReplay) {
			return caller{}, nil, &bridgeError{http.StatusUnauthorized, "NIP-98: replay detected"}
		}
		return caller{}, nil, &bridgeError{http.StatusUnauthorized, "NIP-98: " + err.Error()}
	}
	c := caller{pubkey: res.PubKey.Hex()}
	var grant *nipoa.Tag
	if t := res.Event.Tags.Find(nipoa.TagName); t != nil {
		grant, _ = attestedGrant(t, c.pubkey)
	}
	if h := req.Header.Get(workspace.HeaderAuthTag); grant == nil && h != "" {
		grant, _ = headerGrant(h, c.pubkey)
	}
	owner, gerr := grantOwner(grant, r.cfg.Now())
	c.owner = owner
	if msg := r.gate(c); msg != "" {
		if gerr != nil && r.member(caller{pubkey: grant.Owner.Hex()}) {
			msg = "restricted: " + gerr.Error() + "; ask the owner for a new one"
		}
		return caller{}, nil, &bridgeError{http.StatusForbidden, msg}
	}
	return c, grant, nil
}

func (r *Relay) serveBridge(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBridgeBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	if len(body) > maxBridgeBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", maxBridgeBody))
		return
	}
	c, grant, berr := r.authenticate(req, body)
	if berr != nil {
		writeError(w, berr.status, berr.msg)
		return
	}
	ctx := withGrant(withCaller(req.Context(), c), grant)
	switch req.URL.Path {
	case "/query", "/count":
		filters, err := r.parseFilters(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if req.URL.Path == "/count" {
			n, err := r.bridgeCount(ctx, filters)
			if err != nil {
				writeError(w, http.StatusInternalServerError, "error: "+err.Error())
				return
			}
			writeJSON(w, http.StatusOK, map[string]int64{"count": n})
			return
		}
		writeJSON(w, http.StatusOK, r.bridgeQuery(ctx, filters))
	case "/events":
		id, berr := r.bridgePublish(ctx, body)
		if berr != nil {
			writeError(w, berr.status, berr.msg)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"event_id": id, "accepted": true, "message": ""})
	}
}

// parseFilters reads a JSON array of filters; a single filter object is
// taken as an array of one.
func (r *Relay) parseFilters(body []byte) ([]bridgeFilter, error) {
	body = bytes.TrimSpace(body)
	var fs []bridgeFilter
	if len(body) > 0 && body[0] == '{' {
		var f bridgeFilter
		if err := json.Unmarshal(body, &f); err != nil {
			return nil, fmt.Errorf("invalid: filter: %w", err)
		}
		fs = append(fs, f)
	} else if err := json.Unmarshal(body, &fs); err != nil {
		return nil, fmt.Errorf("invalid: body must be a JSON array of filters: %w", err)
	}
	if len(fs) > r.cfg.MaxFilters {
		return nil, fmt.Errorf("invalid: more than %d filters", r.cfg.MaxFilters)
	}
	return fs, nil
}

// bridgeQuery runs each filter for the caller and returns the union,
// newest first (ties by id, descending), never nil.
func (r *Relay) bridgeQuery(ctx context.Context, filters []bridgeFilter) []*nostr.Event {
	seen := make(map[string]bool)
	out := make([]*nostr.Event, 0)
	if len(filters) == 1 && r.indexed(filters[0].Filter) {
		// one search: ranked, best first
		evs, err := r.searchEvents(ctx, filters[0].Filter)
		if err != nil || evs == nil {
			return out
		}
		return evs
	}
	for _, bf := range filters {
		f := bf.Filter
		if r.indexed(f) {
			evs, _ := r.searchEvents(ctx, f)
			for _, ev := range evs {
				if !seen[ev.ID] {
					seen[ev.ID] = true
					out = append(out, ev)
				}
			}
			continue
		}
		search := strings.ToLower(f.Search)
		f.Search = ""
		limit := f.Limit
		if search != "" || bf.BeforeID != "" {
			f.Limit = maxQueryLimit
		}
		ch, err := r.queryEvents(ctx, f)
		if err != nil {
			continue
		}
		var got []*nostr.Event
		for ev := range ch {
			if search != "" && !strings.Contains(strings.ToLower(ev.Content), search) {
				continue
			}
			if bf.BeforeID != "" && f.Until != nil && ev.CreatedAt == *f.Until && ev.ID >= bf.BeforeID {
				continue
			}
			got = append(got, ev)
		}
		sortEvents(got)
		if limit > 0 && len(got) > limit {
			got = got[:limit]
		}
		for _, ev := range got {
			if !seen[ev.ID] {
				seen[ev.ID] = true
				out = append(out, ev)
			}
		}
	}
	sortEvents(out)
	return out
}

// bridgeCount counts the events any of the filters matches, each once,
// with no cap: one plain filter goes to countEvents, several (or a search
// or before_id) are walked and their ids collected.
func (r *Relay) bridgeCount(ctx context.Context, filters []bridgeFilter) (int64, error) {
	if len(filters) == 1 && filters[0].Search == "" && filters[0].BeforeID == "" {
		return r.countEvents(ctx, filters[0].Filter)
	}
	if r.readRefused(ctx) {
		return 0, nil
	}
	if len(filters) == 1 && r.indexed(filters[0].Filter) {
		return r.searchCount(ctx, filters[0].Filter)
	}
	seen := make(map[string]bool)
	for _, bf := range filters {
		f := bf.Filter
		if r.indexed(f) {
			evs, err := r.searchAll(ctx, f, maxSearchCount)
			if err != nil {
				return 0, err
			}
			for _, ev := range evs {
				seen[ev.ID] = true
			}
			continue
		}
		search := strings.ToLower(f.Search)
		f.Search = ""
		keep := r.readCheck(ctx, f)
		err := r.eachStored(ctx, f, func(ev *nostr.Event) {
			switch {
			case keep != nil && !keep(ev):
			case search != "" && !strings.Contains(strings.ToLower(ev.Content), search):
			case bf.BeforeID != "" && f.Until != nil && ev.CreatedAt == *f.Until && ev.ID >= bf.BeforeID:
			default:
				seen[ev.ID] = true
			}
		})
		if err != nil {
			return 0, err
		}
	}
	return int64(len(seen)), nil
}

func sortEvents(evs []*nostr.Event) {
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].CreatedAt != evs[j].CreatedAt {
			return evs[i].CreatedAt > evs[j].CreatedAt
		}
		return evs[i].ID > evs[j].ID
	})
}

// statusOf maps an OK reason prefix to an HTTP status.
func statusOf(reason string) int {
	prefix, _, _ := strings.Cut(reason, ":")
	switch prefix {
	case "auth-required":
		return http.StatusUnauthorized
	case "restricted", "blocked":
		return http.StatusForbidden
	case "rate-limited":
		return http.StatusTooManyRequests
	case "invalid", "pow", "duplicate":
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// bridgePublish stores one event through the same pipeline as the
// websocket and hands it to live subscribers.
func (r *Relay) bridgePublish(ctx context.Context, body []byte) (string, *bridgeError) {
	var ev nostr.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return "", &bridgeError{http.StatusBadRequest, "invalid: body must be one event: " + err.Error()}
	}
	if !ev.CheckID() {
		return ev.ID, &bridgeError{http.StatusBadRequest, "invalid: id is computed incorrectly"}
	}
	if ok, err := ev.CheckSignature(); err != nil || !ok {
		return ev.ID, &bridgeError{http.StatusBadRequest, "invalid: signature is invalid"}
	}
	if nostr.IsEphemeralKind(ev.Kind) {
		return ev.ID, &bridgeError{http.StatusBadRequest, "invalid: ephemeral kinds go over the websocket"}
	}
	if reject, msg := r.rejectEvent(ctx, &ev); reject {
		return ev.ID, &bridgeError{statusOf(msg), msg}
	}
	// addEvent runs the write gate again; the rate limiter must not
	// charge twice, so the second pass is marked as checked.
	skip, err := r.addEvent(checked(ctx), &ev)
	if err != nil {
		return ev.ID, &bridgeError{statusOf(err.Error()), err.Error()}
	}
	if !skip {
		r.broadcast(&ev)
	}
	return ev.ID, nil
}

type checkedKey struct{}

func checked(ctx context.Context) context.Context { return context.WithValue(ctx, checkedKey{}, true) }
