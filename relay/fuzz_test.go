package relay

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// maskedText builds a masked client text frame.
func maskedText(payload string) []byte {
	mask := []byte{1, 2, 3, 4}
	f := []byte{0x81}
	n := len(payload)
	switch {
	case n < 126:
		f = append(f, 0x80|byte(n))
	default:
		f = append(f, 0x80|126, byte(n>>8), byte(n))
	}
	f = append(f, mask...)
	for i := 0; i < n; i++ {
		f = append(f, payload[i]^mask[i%4])
	}
	return f
}

// FuzzSniff feeds arbitrary client bytes through the frame inspector: it
// must never panic and must hand on exactly as many bytes as it read.
func FuzzSniff(f *testing.F) {
	f.Add(maskedText(`["AUTH",{"kind":22242,"tags":[["challenge","abc"]]}]`))
	f.Add(maskedText(`["REQ","x",{}]`))
	f.Add(append(maskedText(`["AUTH",{}]`), maskedText(`["CLOSE","x"]`)...))
	f.Add([]byte{0x81, 0xff, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		s := &sniffConn{
			src:     bytes.NewReader(in),
			inspect: func([]byte) authVerdict { return authVerdict{challenge: "abc", id: "i", reason: "r"} },
		}
		out, err := io.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(in) {
			t.Fatalf("sniffer passed %d bytes of %d", len(out), len(in))
		}
	})
}

func TestSniffSpoilsRefusedChallenge(t *testing.T) {
	in := maskedText(`["AUTH",{"tags":[["challenge","abc"],["challenge","abc"]]}]`)
	s := &sniffConn{
		src:     bytes.NewReader(in),
		inspect: func([]byte) authVerdict { return authVerdict{challenge: "abc"} },
	}
	out, _ := io.ReadAll(s)
	size, _ := frameSize(out)
	hdr := size - frameLen(out)
	var plain []byte
	for i, b := range out[hdr:] {
		plain = append(plain, b^out[hdr-4+i%4])
	}
	if bytes.Contains(plain, []byte("abc")) || bytes.Count(plain, []byte("xbc")) != 2 {
		t.Fatalf("refused AUTH passed on as %s; want every challenge spoiled", plain)
	}
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
