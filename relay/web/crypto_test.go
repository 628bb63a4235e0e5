package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/testexe"
	"buzzbox/internal/workspace/nipoa"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

type vector struct {
	SK  string `json:"sk"`
	PK  string `json:"pk"`
	Aux string `json:"aux"`
	Msg string `json:"msg"`
	Sig string `json:"sig"`
	OK  bool   `json:"ok"`
}

type keyPair struct {
	Hex  string `json:"hex"`
	Npub string `json:"npub,omitempty"`
	Nsec string `json:"nsec,omitempty"`
}

type signReq struct {
	SK  string      `json:"sk"`
	Tpl nostr.Event `json:"tpl"`
}

type crossOut struct {
	Vectors []struct {
		Verify bool   `json:"verify"`
		PK     string `json:"pk"`
		Sig    string `json:"sig"`
	} `json:"vectors"`
	GoEvents []struct {
		Verify bool   `json:"verify"`
		ID     string `json:"id"`
	} `json:"goEvents"`
	Signed []nostr.Event `json:"signed"`
	Npubs  []keyPair     `json:"npubs"`
	Nsecs  []keyPair     `json:"nsecs"`
	SHA    []string      `json:"sha"`
	Owners []string      `json:"owners"`
	// With nostr-tools: each page event verified by nostr-tools, and each
	// nostr-tools event (of the same templates) verified by the page.
	ToolsVerifyPage   []bool `json:"toolsVerifyPage"`
	PageVerifiesTools []bool `json:"pageVerifiesTools"`
}

// runModules runs the page's crypto modules under node on input.
func runModules(t *testing.T, input map[string]any) crossOut {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP(loud): node is not installed; the page's crypto modules are not cross-tested (run scripts/test.sh, which installs it)")
	}
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	input["dir"] = dir
	in, _ := json.Marshal(input)
	cmd := exec.Command(node, filepath.Join("testdata", "crosstest.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node crosstest.mjs: %v\n%s", err, stderr.String())
	}
	var out crossOut
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("node crosstest.mjs output: %v\n%s", err, b)
	}
	return out
}

func readVectors(t *testing.T) []vector {
	f, err := os.ReadFile(filepath.Join("testdata", "bip340-vectors.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(f), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	rows, err := csv.NewReader(strings.NewReader(strings.Join(lines, "\n"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	for _, r := range rows[1:] {
		vs = append(vs, vector{SK: r[0], PK: r[1], Aux: r[2], Msg: r[3], Sig: r[4], OK: r[5] == "TRUE"})
	}
	return vs
}

// TestSchnorrBIP340Vectors runs the official BIP-340 vectors through the
// page's secp256k1 and Schnorr code: each signing vector gives the same
// public key and signature, each verification the expected verdict.
func TestSchnorrBIP340Vectors(t *testing.T) {
	vs := readVectors(t)
	if len(vs) < 10 {
		t.Fatalf("read %d vectors; want the BIP-340 set", len(vs))
	}
	out := runModules(t, map[string]any{"vectors": vs, "goEvents": []any{}, "sign": []any{}, "npubs": []any{}, "nsecs": []any{}, "sha": []any{}})
	for i, v := range vs {
		got := out.Vectors[i]
		if got.Verify != v.OK {
			t.Errorf("vector %d: verify = %v; want %v", i, got.Verify, v.OK)
		}
		if v.SK == "" {
			continue
		}
		if got.PK != v.PK {
			t.Errorf("vector %d: public key = %s; want %s", i, got.PK, v.PK)
		}
		if got.Sig != v.Sig {
			t.Errorf("vector %d: signature = %s; want %s", i, got.Sig, v.Sig)
		}
	}
}

// awkward contents exercise NIP-01's escaping: quotes, backslashes,
// control characters, non-ASCII and astral characters, HTML.
var awkward = []string{
	"", "hello", `quote " and \ backslash`, "line\nbreak\ttab\rcr\bbs\ffeed", "nul\x00 and \x01\x1f\x7f",
	"ünïcödé — “quotes” 日本語 🐝🎉", "<script>alert(1)</script>&amp;", "\u2028\u2029 separators", strings.Repeat("long ", 2000),
}

// TestEventsCrossVerifyWithGoNostr signs events in Go that the page must
// verify and whose ids it must compute the same, and signs events in the
// page that go-nostr must verify.
func TestEventsCrossVerifyWithGoNostr(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	var goEvents []nostr.Event
	var reqs []signReq
	for i, c := range awkward {
		ev := nostr.Event{Kind: 9, CreatedAt: nostr.Timestamp(1700000000 + i), Content: c,
			Tags: nostr.Tags{{"h", "5d0c1072-0000-4000-8000-000000000000"}, {"e", strings.Repeat("ab", 32), "", "reply"}, {"t", c}}}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		goEvents = append(goEvents, ev)
		reqs = append(reqs, signReq{SK: sk, Tpl: nostr.Event{Kind: 7 + i, CreatedAt: nostr.Timestamp(1700000100 + i), Content: c, Tags: nostr.Tags{{"p", strings.Repeat("cd", 32)}, {"x", c, ""}}}})
	}
	// A bad signature must be refused by the page.
	bad := goEvents[1]
	bad.Content = "tampered"
	goEvents = append(goEvents, bad)

	out := runModules(t, map[string]any{"vectors": []any{}, "goEvents": goEvents, "sign": reqs, "npubs": []any{}, "nsecs": []any{}, "sha": []any{}})
	for i, ev := range goEvents {
		want := i < len(awkward)
		if out.GoEvents[i].Verify != want {
			t.Errorf("go-nostr event %d (%q): page verify = %v; want %v", i, truncate(ev.Content), out.GoEvents[i].Verify, want)
		}
		if id := ev.GetID(); out.GoEvents[i].ID != id {
			t.Errorf("go-nostr event %d (%q): page id = %s; want %s", i, truncate(ev.Content), out.GoEvents[i].ID, id)
		}
	}
	pub, _ := nostr.GetPublicKey(sk)
	for i, ev := range out.Signed {
		if ev.PubKey != pub {
			t.Errorf("page event %d: pubkey = %s; want %s", i, ev.PubKey, pub)
		}
		if ev.ID != ev.GetID() {
			t.Errorf("page event %d (%q): id = %s; go-nostr computes %s", i, truncate(ev.Content), ev.ID, ev.GetID())
		}
		if ok, err := ev.CheckSignature(); !ok {
			t.Errorf("page event %d (%q): go-nostr rejects the signature: %v", i, truncate(ev.Content), err)
		}
		if ev.Content != awkward[i] {
			t.Errorf("page event %d: content changed to %q", i, truncate(ev.Content))
		}
	}
}

// TestEventsCrossVerifyWithNostrTools: events the page signs verify in
// nostr-tools (the JavaScript reference), and events nostr-tools signs
// verify in the page, awkward contents included.
func TestEventsCrossVerifyWithNostrTools(t *testing.T) {
	modules, _ := testexe.NodeModules(t)
	tools := filepath.Join(modules, "nostr-tools")
	if _, err := os.Stat(filepath.Join(tools, "lib", "esm", "pure.js")); err != nil {
		t.Skipf("SKIP(loud): nostr-tools missing (%v); run scripts/test.sh (npm install in scripts/node)", err)
	}
	sk := nostr.GeneratePrivateKey()
	var reqs []signReq
	for i, c := range awkward {
		reqs = append(reqs, signReq{SK: sk, Tpl: nostr.Event{Kind: 9, CreatedAt: nostr.Timestamp(1700000200 + i), Content: c, Tags: nostr.Tags{{"h", "5d0c1072-0000-4000-8000-000000000000"}, {"t", c}}}})
	}
	out := runModules(t, map[string]any{"vectors": []any{}, "goEvents": []any{}, "sign": reqs, "npubs": []any{}, "nsecs": []any{}, "sha": []any{}, "nostrTools": tools})
	if len(out.ToolsVerifyPage) != len(awkward) || len(out.PageVerifiesTools) != len(awkward) {
		t.Fatalf("cross-check ran %d and %d times; want %d each", len(out.ToolsVerifyPage), len(out.PageVerifiesTools), len(awkward))
	}
	for i := range awkward {
		if !out.ToolsVerifyPage[i] {
			t.Errorf("page event %d (%q): nostr-tools rejects it", i, truncate(awkward[i]))
		}
		if !out.PageVerifiesTools[i] {
			t.Errorf("nostr-tools event %d (%q): the page rejects it", i, truncate(awkward[i]))
		}
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// TestBech32AndSHA256MatchGo checks npub/nsec both ways against nip19 and
// the page's sha256 against crypto/sha256 at block-boundary lengths.
func TestBech32AndSHA256MatchGo(t *testing.T) {
	var npubs, nsecs []keyPair
	for range 8 {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		np, _ := nip19.EncodePublicKey(pk)
		ns, _ := nip19.EncodePrivateKey(sk)
		npubs = append(npubs, keyPair{Hex: pk, Npub: np})
		nsecs = append(nsecs, keyPair{Hex: sk, Nsec: ns})
	}
	var shas []string
	var lens = []int{0, 1, 55, 56, 63, 64, 65, 119, 120, 1000}
	for _, n := range lens {
		b := bytes.Repeat([]byte{0xa5}, n)
		shas = append(shas, hex.EncodeToString(b))
	}
	out := runModules(t, map[string]any{"vectors": []any{}, "goEvents": []any{}, "sign": []any{}, "npubs": npubs, "nsecs": nsecs, "sha": shas})
	for i := range npubs {
		if out.Npubs[i].Npub != npubs[i].Npub || out.Npubs[i].Hex != npubs[i].Hex {
			t.Errorf("npub %d: page = %+v; want %+v", i, out.Npubs[i], npubs[i])
		}
		if out.Nsecs[i].Nsec != nsecs[i].Nsec || out.Nsecs[i].Hex != nsecs[i].Hex {
			t.Errorf("nsec %d: page gives a different encoding", i)
		}
	}
	for i, n := range lens {
		sum := sha256.Sum256(bytes.Repeat([]byte{0xa5}, n))
		if out.SHA[i] != hex.EncodeToString(sum[:]) {
			t.Errorf("sha256 of %d bytes: page = %s; want %x", n, out.SHA[i], sum)
		}
	}
}

// TestNIPOAAttestationsMatchGo: owner attestations made with nipoa.Sign
// verify in the page and name the owner; tampered, self-made or
// misplaced ones name nobody.
func TestNIPOAAttestationsMatchGo(t *testing.T) {
	owner, _ := nostrkey.ParseSecret(nostr.GeneratePrivateKey())
	agentSK := nostr.GeneratePrivateKey()
	agent, _ := nostrkey.ParseSecret(agentSK)
	ev := func(tag nostr.Tag) nostr.Event {
		e := nostr.Event{Kind: 0, CreatedAt: nostr.Now(), Content: "{}", Tags: nostr.Tags{tag}}
		e.Sign(agentSK)
		return e
	}
	good, err := nipoa.Sign(owner, agent.Public(), "kind=9&created_at<4102444800")
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := nipoa.Sign(owner, agent.Public(), "")
	self, _ := nipoa.Sign(agent, agent.Public(), "")
	tampered := good.Nostr()
	tampered[2] = "kind=9"
	other, _ := nipoa.Sign(owner, owner.Public(), "")
	cases := []struct {
		ev   nostr.Event
		want string
	}{
		{ev(good.Nostr()), owner.Public().Hex()},
		{ev(plain.Nostr()), owner.Public().Hex()},
		{ev(self.Nostr()), ""},
		{ev(tampered), ""},
		{ev(other.Nostr()), ""},
		{ev(nostr.Tag{"auth", "zz", "", "00"}), ""},
	}
	var evs []nostr.Event
	for _, c := range cases {
		evs = append(evs, c.ev)
	}
	out := runModules(t, map[string]any{"vectors": []any{}, "goEvents": []any{}, "sign": []any{}, "npubs": []any{}, "nsecs": []any{}, "sha": []any{}, "attested": evs})
	for i, c := range cases {
		if out.Owners[i] != c.want {
			t.Errorf("case %d (tag %v): page says owner %q; want %q", i, c.ev.Tags[0], out.Owners[i], c.want)
		}
	}
}

// TestPageParsersSurviveRandomInput runs the page's parsers on random and
// mutated input under node (testdata/fuzz.mjs): bech32 and key parsing,
// frames from a hostile relay, hostile events into the store. Each must
// refuse with an Error or ignore the input, never crash. BUZZ_WEB_FUZZ_SEED
// replays one seed.
func TestPageParsersSurviveRandomInput(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP(loud): node is not installed; the page's parsers are not fuzzed")
	}
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	seed := time.Now().UnixNano() & 0x7fffffff
	if s := os.Getenv("BUZZ_WEB_FUZZ_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	in, _ := json.Marshal(map[string]any{"dir": dir, "seed": seed, "rounds": 1500})
	cmd := exec.Command(node, filepath.Join("testdata", "fuzz.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node fuzz.mjs (seed %d): %v\n%s", seed, err, stderr.String())
	}
	var out struct {
		Checked  int      `json:"checked"`
		Failures []string `json:"failures"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("fuzz.mjs output %q: %v", b, err)
	}
	if out.Checked < 1500 {
		t.Errorf("checked %d inputs; want every round run", out.Checked)
	}
	for _, f := range out.Failures {
		t.Errorf("seed %d (BUZZ_WEB_FUZZ_SEED=%d replays it): %s", seed, seed, f)
	}
}
