package relay

import (
	"encoding/json"
	"testing"

	"buzzbox/internal/workspace"
)

// FuzzManagementRequest feeds arbitrary NIP-86 bodies to the request
// parsers: they must never panic, and what they accept must be in range.
func FuzzManagementRequest(f *testing.F) {
	f.Add([]byte(`{"method":"banpubkey","params":["` + chanA + `","spam"]}`))
	f.Add([]byte(`{"method":"allowpubkey","params":["npub1zzz",7]}`))
	f.Add([]byte(`{"method":"createinvite","params":[{"channels":["` + chanA + `","` + chanA + `"],"expires_in":86400}]}`))
	f.Add([]byte(`{"method":"createinvite","params":[{"expires_in":1e300}]}`))
	f.Add([]byte(`{"method":"createinvite","params":[null]}`))
	f.Add([]byte(`{"method":"x","params":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var call rpcRequest
		if json.Unmarshal(body, &call) != nil {
			return
		}
		if pk, reason, err := pubkeyParams(call); err == nil {
			if len(pk) != 64 || len(reason) > maxReasonBytes {
				t.Fatalf("pubkeyParams(%s) = %q, %d-byte reason", body, pk, len(reason))
			}
		}
		chans, ttl, err := parseInviteParams(call.Params)
		if err != nil {
			return
		}
		if ttl < 1e9 || ttl > maxInviteTTL || len(chans) > maxInviteChannels {
			t.Fatalf("parseInviteParams(%s) = %d channels, ttl %s", body, len(chans), ttl)
		}
		seen := map[string]bool{}
		for _, id := range chans {
			if !workspace.IsChannelID(id) || seen[id] {
				t.Fatalf("parseInviteParams(%s) gave channel %q (repeat %v)", body, id, seen[id])
			}
			seen[id] = true
		}
	})
}
