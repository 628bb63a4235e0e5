package relay

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/nbd-wtf/go-nostr/nip11"
)

// supportedNIPs returns the NIPs the NIP-11 document names.
func supportedNIPs() []any { return []any{1, 9, 11, 29, 40, 42, 45, 70, 86, 98} }

// infoDoc is the NIP-11 document plus where the HTTP bridge and git
// hosting live.
type infoDoc struct {
	nip11.RelayInformationDocument
	Limitation *limitation `json:"limitation,omitempty"` // shadows the embedded one
	Bridge     bridgeInfo  `json:"http_bridge"`
	Git        string      `json:"git"`
}

// limitation adds NIP-11's created_at bounds, in seconds from now, which
// go-nostr's document lacks; zero when there is no bound.
type limitation struct {
	nip11.RelayLimitationDocument
	CreatedAtLowerLimit int64 `json:"created_at_lower_limit,omitempty"`
	CreatedAtUpperLimit int64 `json:"created_at_upper_limit,omitempty"`
}

type bridgeInfo struct {
	Query  string `json:"query"`
	Count  string `json:"count"`
	Events string `json:"events"`
	Auth   string `json:"auth"`
}

func (r *Relay) serveInfo(w http.ResponseWriter, req *http.Request) {
	doc := infoDoc{
		RelayInformationDocument: nip11.RelayInformationDocument{
			Name:          "buzz-relay",
			Description:   "workspace relay: channels (NIP-29 style), HTTP bridge, git hosting",
			PubKey:        r.pubkey,
			SupportedNIPs: supportedNIPs(),
			Software:      "buzzbox",
			Version:       "1",
		},
		Limitation: &limitation{
			RelayLimitationDocument: nip11.RelayLimitationDocument{
				MaxMessageLength: maxMessageBytes,
				MaxSubscriptions: r.cfg.MaxSubscriptions,
				MaxFilters:       r.cfg.MaxFilters,
				MaxLimit:         maxQueryLimit,
				MaxContentLength: r.cfg.MaxEventBytes,
				AuthRequired:     !r.cfg.Open,
				RestrictedWrites: !r.cfg.Open,
			},
			CreatedAtLowerLimit: int64(max(r.cfg.MaxAge, 0) / time.Second),
			CreatedAtUpperLimit: int64(max(r.cfg.MaxFuture, 0) / time.Second),
		},
		Bridge: bridgeInfo{
			Query:  "POST /query (JSON array of filters)",
			Count:  "POST /count (JSON array of filters)",
			Events: "POST /events (one signed event)",
			Auth:   "NIP-98: Authorization: Nostr <base64 kind 27235>",
		},
		Git: "/git/<owner npub or hex>/<name>.git (smart HTTP, NIP-98)",
	}
	w.Header().Set("Content-Type", "application/nostr+json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	json.NewEncoder(w).Encode(doc)
}
