package relay

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
)

// FuzzClientMessage reads arbitrary client messages as the websocket
// loop does: no panic; an EVENT, REQ or CLOSE that parses comes back
// intact through the relay's own message builders (sub ids with quotes
// and control characters included; JSON has no way to carry invalid
// UTF-8, which comes back as U+FFFD), as a client would read them.
func FuzzClientMessage(f *testing.F) {
	f.Add([]byte(`["AUTH",{"kind":22242,"tags":[["challenge","abc"]]}]`))
	f.Add([]byte(`["REQ","x",{"kinds":[1],"#h":["c"]}]`))
	f.Add([]byte(`["EVENT",{"id":"00","pubkey":"","created_at":1,"kind":1,"tags":[["a","\"]],"content":"\u0000","sig":""}]`))
	f.Add([]byte(`["CLOSE","a\"b"]`))
	f.Add([]byte(`["COUNT","c",{"kinds":[7],"#e":["x"]}]`))
	f.Add([]byte(`["NEG-OPEN","n",{},"61"]`))
	f.Add([]byte(`"`))
	f.Fuzz(func(t *testing.T, in []byte) {
		env, err := parseClientMessage(in)
		if err != nil || !utf8.Valid(in) {
			return
		}
		switch env := env.(type) {
		case *nostr.EventEnvelope:
			raw, err := env.Event.MarshalJSON()
			if err != nil {
				return
			}
			back, err := parseClientMessage(eventMsg("s\"1", raw))
			got, ok := back.(*nostr.EventEnvelope)
			if err != nil || !ok || got.SubscriptionID == nil || *got.SubscriptionID != "s\"1" || got.Event.ID != env.Event.ID || got.Event.Content != env.Event.Content {
				t.Fatalf("EVENT %s came back as %v, %v", raw, back, err)
			}
		case *nostr.ReqEnvelope:
			back, err := parseClientMessage(closedMsg(env.SubscriptionID, "invalid: x"))
			got, ok := back.(*nostr.ClosedEnvelope)
			if err != nil || !ok || got.SubscriptionID != env.SubscriptionID || got.Reason != "invalid: x" {
				t.Fatalf("CLOSED for %q came back as %v, %v", env.SubscriptionID, back, err)
			}
		case *nostr.CloseEnvelope:
			back, err := parseClientMessage(eoseMsg(string(*env)))
			got, ok := back.(*nostr.EOSEEnvelope)
			if err != nil || !ok || string(*got) != string(*env) {
				t.Fatalf("EOSE for %q came back as %v, %v", string(*env), back, err)
			}
		}
	})
}

// FuzzNormHost: normalising twice changes nothing.
func FuzzNormHost(f *testing.F) {
	for _, s := range []string{"localhost:3000", "[::1]:80", "Example.COM", "127.0.0.1", "::1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := normHost(s)
		if twice := normHost(once); twice != once {
			t.Fatalf("normHost(%q) = %q, again %q", s, once, twice)
		}
	})
}

// FuzzGitPath: any path parses or is refused, never panics, and an
// accepted repo name passes validRepoName.
func FuzzGitPath(f *testing.F) {
	f.Add("/git/" + "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2" + "/proj.git/info/refs")
	f.Add("/git/npub1xyz/..x.git/git-upload-pack")
	f.Fuzz(func(t *testing.T, p string) {
		u, err := url.Parse(p)
		if err != nil {
			return
		}
		for _, m := range []string{"GET", "POST"} {
			rt, status := parseGitPath(&http.Request{Method: m, URL: u})
			if status == 0 && !validRepoName(rt.repo) {
				t.Fatalf("accepted repo name %q", rt.repo)
			}
		}
	})
}

// FuzzParseFilters: bridge bodies decode or are refused without panics.
func FuzzParseFilters(f *testing.F) {
	f.Add([]byte(`[{"kinds":[1],"#h":["x"],"before_id":"ab","until":5}]`))
	f.Add([]byte(`{"ids":["00"]}`))
	f.Add([]byte(`[]`))
	r := &Relay{cfg: Config{MaxFilters: defaultMaxFilters}}
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := r.parseFilters(b)
		if err == nil && len(fs) > defaultMaxFilters {
			t.Fatalf("%d filters accepted", len(fs))
		}
	})
}

// FuzzParseNote reads arbitrary notification payloads: no panic, and
// what parses names a valid id and, for an ephemeral one, an ephemeral
// kind, or is a mark with a snapshot; a stored event's note and a mark
// print back to the same payload.
func FuzzParseNote(f *testing.F) {
	f.Add("s buzz-relay-0011223344556677 1796140831 " + strings.Repeat("ab", 32))
	f.Add(`e buzz-relay-0011223344556677 {"kind":20001,"id":"` + strings.Repeat("cd", 32) + `","pubkey":"","created_at":1,"tags":[],"content":"typing","sig":""}`)
	f.Add("m buzz-relay-0011223344556677 1000:1004:1000,1002")
	f.Add("m buzz-relay-0011223344556677 1000:1000:")
	f.Add("s x")
	f.Add("")
	f.Fuzz(func(t *testing.T, payload string) {
		n, err := parseNote(payload)
		if err != nil {
			return
		}
		if n.snapshot != "" {
			again, err := parseNote("m " + n.origin + " " + n.snapshot)
			if err != nil || !isSnapshot(n.snapshot) || again != n {
				t.Fatalf("parseNote round trip of mark %q: %+v, %v", payload, again, err)
			}
			return
		}
		if !nostr.IsValid32ByteHex(n.id) || n.origin == "" {
			t.Fatalf("parseNote(%q) = %+v without error", payload, n)
		}
		if n.ev != nil && !nostr.IsEphemeralKind(n.ev.Kind) {
			t.Fatalf("parseNote(%q) took kind %d as ephemeral", payload, n.ev.Kind)
		}
		if n.ev == nil {
			again, err := parseNote(fmt.Sprintf("s %s %d %s", n.origin, n.at, n.id))
			if err != nil || again.id != n.id || again.at != n.at {
				t.Fatalf("parseNote round trip of %q: %+v, %v", payload, again, err)
			}
		}
	})
}
