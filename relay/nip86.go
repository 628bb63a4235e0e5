package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"buzzbox/internal/workspace/nip98"
)

// NIP-86 relay management: POST to the relay URL with Content-Type
// application/nostr+json+rpc, a NIP-98 Authorization whose u names the
// relay (http(s) or ws(s) form) with method POST and a payload tag, and a
// body {"method": "…", "params": […]}. The answer is {"result": …} or
// {"result": null, "error": "…"}. Only the owner and the admins may call;
// a request without a valid token gets 401, another key 403. A method
// that fails (bad params, unknown method) answers 200 with error set, as
// NIP-86 clients expect; a body that is not a request answers 400.
const contentTypeRPC = "application/nostr+json+rpc"

// Method names. disallowpubkey is the name this project's issue uses;
// unallowpubkey is the one later NIP-86 drafts use; both are served.
const (
	methodSupported    = "supportedmethods"
	methodAllow        = "allowpubkey"
	methodDisallow     = "disallowpubkey"
	methodUnallow      = "unallowpubkey"
	methodListAllowed  = "listallowedpubkeys"
	methodBan          = "banpubkey"
	methodUnban        = "unbanpubkey"
	methodListBanned   = "listbannedpubkeys"
	methodCreateInvite = "createinvite" // buzz extensions (invite.go)
	methodListInvites  = "listinvites"
	methodRevokeInvite = "revokeinvite"
)

func supportedMethods() []string {
	return []string{methodSupported, methodAllow, methodDisallow, methodUnallow, methodListAllowed,
		methodBan, methodUnban, methodListBanned, methodCreateInvite, methodListInvites, methodRevokeInvite}
}

// isManagementCall reports whether req is a NIP-86 call by its media type.
func isManagementCall(req *http.Request) bool {
	mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return err == nil && strings.EqualFold(mt, contentTypeRPC)
}

type rpcRequest struct {
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

type rpcResponse struct {
	Result any    `json:"result"`
	Error  string `json:"error,omitempty"`
}

func writeRPC(w http.ResponseWriter, status int, resp rpcResponse) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(resp)
}

func rpcFail(w http.ResponseWriter, status int, format string, a ...any) {
	writeRPC(w, status, rpcResponse{Error: fmt.Sprintf(format, a...)})
}

// readPost reads a POST body of at most limit bytes, answering the client
// itself (and returning false) when it cannot.
func readPost(w http.ResponseWriter, req *http.Request, limit int) ([]byte, bool) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		rpcFail(w, http.StatusMethodNotAllowed, "use POST")
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, int64(limit)+1))
	if err != nil {
		rpcFail(w, http.StatusBadRequest, "read body: %v", err)
		return nil, false
	}
	if len(body) > limit {
		rpcFail(w, http.StatusRequestEntityTooLarge, "body over %d bytes", limit)
		return nil, false
	}
	return body, true
}

// verifyPost checks the NIP-98 token of a POST to path on this relay: the
// u tag must name the relay's http(s) URL with that path (or, when wsToo,
// its ws(s) URL, which NIP-86 clients also sign), the payload tag must
// hash body, and the token is good once.
func (r *Relay) verifyPost(req *http.Request, body []byte, path string, wsToo bool) (nip98.Result, error) {
	v := r.verifier()
	at := func(base string, _ *http.Request) string { return base + path }
	want := r.expect(req, at)
	want.Method, want.Body, want.RequirePayload = http.MethodPost, body, true
	res, err := v.Request(req, want)
	if wsToo && errors.Is(err, nip98.ErrURL) {
		if bases := r.names().bases(r.scheme(req)); len(bases) > 0 {
			want.URL, want.OtherURLs = at(bases[0], req), nil
			for _, b := range bases[1:] {
				want.OtherURLs = append(want.OtherURLs, at(b, req))
			}
			res, err = v.Request(req, want)
		}
	}
	return res, err
}

func (r *Relay) serveManagement(w http.ResponseWriter, req *http.Request) {
	body, ok := readPost(w, req, maxManagementBody)
	if !ok {
		return
	}
	res, err := r.verifyPost(req, body, req.URL.Path, true)
	if err != nil {
		if errors.Is(err, nip98.ErrNoToken) {
			w.Header().Set("WWW-Authenticate", nip98.Challenge(http.MethodPost))
		}
		rpcFail(w, http.StatusUnauthorized, "NIP-98: %v; sign a kind 27235 event with u = this relay's URL, method POST and a payload tag", err)
		return
	}
	who := res.PubKey.Hex()
	if !r.mem.isAdmin(who) {
		r.log.Info("management call refused", "pubkey", who)
		rpcFail(w, http.StatusForbidden, "restricted: only the relay owner or an admin may manage this relay")
		return
	}
	var call rpcRequest
	if err := json.Unmarshal(body, &call); err != nil || call.Method == "" {
		rpcFail(w, http.StatusBadRequest, `invalid: body must be {"method":"…","params":[…]}`)
		return
	}
	result, err := r.manage(req, who, call)
	if err != nil {
		writeRPC(w, http.StatusOK, rpcResponse{Error: err.Error()})
		return
	}
	r.log.Info("management call", "pubkey", who, "method", call.Method)
	writeRPC(w, http.StatusOK, rpcResponse{Result: result})
}

// manage runs one management method for admin who.
func (r *Relay) manage(req *http.Request, who string, call rpcRequest) (any, error) {
	ctx := req.Context()
	switch call.Method {
	case methodSupported:
		return supportedMethods(), nil
	case methodListAllowed:
		return r.mem.listAllowed(), nil
	case methodListBanned:
		return r.mem.listBanned(), nil
	case methodAllow, methodBan:
		pk, reason, err := pubkeyParams(call)
		if err != nil {
			return nil, err
		}
		if call.Method == methodBan && r.mem.isAdmin(pk) {
			return nil, fmt.Errorf("%s: %s is the relay owner or an admin and cannot be banned", call.Method, pk)
		}
		err = r.changeMember(ctx, pk, func(rec *memberRecord) {
			rec.By = who
			if call.Method == methodAllow {
				rec.Allowed, rec.AllowReason = true, reason
			} else {
				rec.Banned, rec.BanReason = true, reason
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", call.Method, err)
		}
		return true, nil
	case methodDisallow, methodUnallow, methodUnban:
		pk, _, err := pubkeyParams(call)
		if err != nil {
			return nil, err
		}
		if call.Method != methodUnban {
			switch {
			case r.mem.isAdmin(pk):
				return nil, fmt.Errorf("%s: %s is the relay owner or an admin; change --owner or --admin and restart", call.Method, pk)
			case r.mem.static[pk]:
				return nil, fmt.Errorf("%s: %s is allowed by --allow or --allow-file; remove it there and restart, or ban it", call.Method, pk)
			}
		}
		if call.Method == methodUnban {
			err = r.changeMember(ctx, pk, func(rec *memberRecord) {
				rec.By, rec.Banned, rec.BanReason = who, false, ""
			})
		} else {
			err = r.removeMember(ctx, pk, who)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", call.Method, err)
		}
		return true, nil
	case methodCreateInvite:
		return r.createInvite(req, who, call.Params)
	case methodListInvites:
		return r.listInvites(who), nil
	case methodRevokeInvite:
		return r.revokeInvite(ctx, who, call.Params)
	}
	return nil, fmt.Errorf("unknown method %.64q; call supportedmethods for the list", call.Method)
}

// pubkeyParams reads ["<pubkey hex or npub>", "<optional reason>"].
func pubkeyParams(call rpcRequest) (pk, reason string, err error) {
	if len(call.Params) == 0 {
		return "", "", fmt.Errorf(`%s: params must be ["<pubkey hex>", "<optional reason>"]`, call.Method)
	}
	var s string
	if err := json.Unmarshal(call.Params[0], &s); err != nil {
		return "", "", fmt.Errorf("%s: the pubkey param must be a string", call.Method)
	}
	if pk, err = parsePubkey(s); err != nil {
		return "", "", fmt.Errorf("%s: pubkey: %w", call.Method, err)
	}
	if len(call.Params) > 1 {
		if err := json.Unmarshal(call.Params[1], &reason); err != nil {
			return "", "", fmt.Errorf("%s: the reason param must be a string", call.Method)
		}
	}
	if len(reason) > maxReasonBytes || !utf8.ValidString(reason) {
		return "", "", fmt.Errorf("%s: reason must be UTF-8 text of at most %d bytes", call.Method, maxReasonBytes)
	}
	return pk, reason, nil
}
