package cli

import (
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/nbd-wtf/go-nostr/nip44"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

func TestParseArgs(t *testing.T) {
	specs := []flagSpec{str("content", "T", ""), list("mention", "P", ""), boolean("broadcast", "")}
	p, err := parseArgs([]string{"--content", "-", "--mention", "a", "--mention=b", "--broadcast", "--relay", "x", "pos", "--", "--content"}, specs)
	if err != nil {
		t.Fatal(err)
	}
	if p.str("content") != "-" || strings.Join(p.list("mention"), ",") != "a,b" || !p.boolean("broadcast") || p.str("relay") != "x" ||
		strings.Join(p.args, ",") != "pos,--content" {
		t.Fatalf("parseArgs = %+v", p)
	}
	for _, bad := range [][]string{{"--nope"}, {"--content"}, {"-x"}, {"--broadcast=maybe"}} {
		if _, err := parseArgs(bad, specs); err == nil {
			t.Errorf("parseArgs(%q) accepted", bad)
		}
	}
}

func TestStripCode(t *testing.T) {
	cases := map[string]string{
		"a `@x` b":              "a      b",
		"``@x` `` @y":           "         @y",
		"```\n@x\n```\n@y":      "   \n  \n   \n@y",
		"  ~~~~go\n@x\n~~~\n@z": "        \n  \n   \n  ",
		"unclosed `@x":          "unclosed `@x",
		"a ``` b @c":            "a ``` b @c",
	}
	for in, want := range cases {
		if got := stripCode(in); got != want {
			t.Errorf("stripCode(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestResolveAt(t *testing.T) {
	members := []member{{"a1", "Alice"}, {"b1", "Bob"}, {"b2", "bob"}, {"c1", "Ada Lovelace"}, {"d1", "dot.name"}}
	cases := []struct {
		text                  string
		resolved, unres, ambi string
	}{
		{"hi @alice", "a1", "", ""},
		{"@Ada Lovelace, hello @ALICE.", "c1,a1", "", ""},
		{"hey @bob", "", "", "bob"},
		{"hey @carol and @alice", "a1", "carol", ""},
		{"mail a@alice.com", "", "", ""},
		{"@dot.name!", "d1", "", ""},
		{"@alicex", "", "alicex", ""},
		{"lone @ here", "", "", ""},
	}
	for _, c := range cases {
		r := resolveAt(c.text, members)
		if strings.Join(r.Resolved, ",") != c.resolved || strings.Join(r.Unresolved, ",") != c.unres || strings.Join(r.Ambiguous, ",") != c.ambi {
			t.Errorf("resolveAt(%q) = %+v; want resolved %q unresolved %q ambiguous %q", c.text, r, c.resolved, c.unres, c.ambi)
		}
	}
}

func TestNostrRefs(t *testing.T) {
	pk := strings.Repeat("ab", 32)
	npub, _ := nip19.EncodePublicKey(pk)
	nprof, _ := nip19.EncodeProfile(strings.Repeat("cd", 32), []string{"wss://r.example"})
	got := nostrRefs("see nostr:" + npub + ", nostr:" + nprof + " nostr:npub1bogus nostr:" + npub)
	if strings.Join(got, ",") != pk+","+strings.Repeat("cd", 32) {
		t.Fatalf("nostrRefs = %v", got)
	}
}

func TestThreadRoot(t *testing.T) {
	r, x, y := strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64)
	p := &nostr.Event{ID: strings.Repeat("f", 64)}
	cases := []struct {
		tags nostr.Tags
		want string
	}{
		{nil, p.ID},
		{nostr.Tags{{"e", r, "", "root"}, {"e", x, "", "reply"}}, r},
		{nostr.Tags{{"e", y, "", "reply"}}, y},
		{nostr.Tags{{"e", r, "", "root"}}, p.ID},
		{nostr.Tags{{"e", "bad", "", "root"}, {"e", y, "", "reply"}}, y},
		{nostr.Tags{{"e", r}}, p.ID},
	}
	for _, c := range cases {
		p.Tags = c.tags
		if got := threadRoot(p); got != c.want {
			t.Errorf("threadRoot(%v) = %s; want %s", c.tags, got, c.want)
		}
	}
}

func TestAuthTagParse(t *testing.T) {
	h64, h128 := strings.Repeat("a", 64), strings.Repeat("b", 128)
	good := []string{`["auth","` + h64 + `","","` + h128 + `"]`, "[auth," + h64 + ",," + h128 + "]",
		`["auth","` + h64 + `","kind=9&created_at<4294967295&created_at>0","` + h128 + `"]`}
	for _, g := range good {
		if _, err := parseAuthTag(g); err != nil {
			t.Errorf("parseAuthTag(%s): %v", g, err)
		}
	}
	bad := []string{"not-json", `["auth","` + h64 + `",""]`, `["auth","` + strings.ToUpper(h64) + `","","` + h128 + `"]`,
		`["auth","` + h64 + `","kind=01","` + h128 + `"]`, `["auth","` + h64 + `","kind=65536","` + h128 + `"]`,
		`["auth","` + h64 + `","kind=1&","` + h128 + `"]`, `["x","` + h64 + `","","` + h128 + `"]`}
	for _, b := range bad {
		if _, err := parseAuthTag(b); err == nil {
			t.Errorf("parseAuthTag(%s) accepted", b)
		}
	}
}

// TestMemVectors pins NIP-AE's published vectors: K_c and the d tags.
func TestMemVectors(t *testing.T) {
	k, err := nip44.GenerateConversationKey("c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5",
		"0000000000000000000000000000000000000000000000000000000000000001")
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(k[:]); got != "c41c775356fd92eadc63ff5a0dc1da211b268cbea22316767095b2871ea1412d" {
		t.Fatalf("K_c = %s", got)
	}
	for slug, want := range map[string]string{
		"core":                 "bdc233238ffe52e272b44cc233c8f33a2bc510b08be04495b225964283be4a90",
		"mem/example":          "72d4f9629106451505d7d341ea85bb3ebad4f654fcfd2aad100d5a35f8a85cba",
		"mem/notes/2026-05-12": "31651571a312780cfdc1f0b706b682ac9f3f51a053e8dca76fe57710bae5a4d4",
	} {
		if got := workspace.MemoryDTag(k, slug); got != want {
			t.Errorf("d(%s) = %s; want %s", slug, got, want)
		}
	}
	v := "hello, agent memory"
	if got := string(memBody{Slug: "mem/example", Value: &v}.encode()); got != `{"slug":"mem/example","value":"hello, agent memory"}` {
		t.Errorf("body = %s", got)
	}
	if got := string(memBody{Slug: "mem/example"}.encode()); got != `{"slug":"mem/example","value":null}` {
		t.Errorf("tombstone = %s", got)
	}
	if _, err := decodeMemBody([]byte(`{"slug":"mem/x","slug":"mem/y","value":"v"}`)); err == nil {
		t.Error("duplicate members accepted")
	}
	for _, s := range []string{"core", "notes", "mem/a/b-c_d", "x9"} {
		if _, err := normalizeSlug(s); err != nil {
			t.Errorf("normalizeSlug(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "Notes", "mem/", "a//b", "-x", strings.Repeat("a", 65)} {
		if _, err := normalizeSlug(s); err == nil {
			t.Errorf("normalizeSlug(%q) accepted", s)
		}
	}
}

func TestTruncateDiff(t *testing.T) {
	hunk := "@@ -1,3 +1,3 @@\n" + strings.Repeat("+line\n", 100)
	d := "diff --git a/x b/x\n" + strings.Repeat(hunk, 200)
	got, cut := truncateDiff(d, maxDiffBytes)
	if !cut || len(got) > maxDiffBytes || !strings.HasSuffix(got, "\n") || !strings.HasPrefix(d[len(got):], "@@ ") {
		t.Fatalf("truncateDiff: %d bytes, cut %v, next %q", len(got), cut, d[len(got):len(got)+10])
	}
}

func FuzzParseArgs(f *testing.F) {
	f.Add("messages\x00send\x00--channel\x00x\x00--content=-\x00--mention\x00a")
	f.Add("--relay\x00--\x00--help")
	specs := []flagSpec{str("content", "T", ""), list("mention", "P", ""), boolean("broadcast", "")}
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		p, err := parseArgs(args, specs)
		if err != nil {
			return
		}
		n := len(p.args)
		for _, v := range p.vals {
			n += len(v)
		}
		if n > len(args) {
			t.Fatalf("parseArgs(%q) produced %d values from %d args", args, n, len(args))
		}
		words, at, _ := leadingWords(args)
		for i, w := range words {
			if args[at[i]] != w {
				t.Fatalf("leadingWords index mismatch")
			}
		}
	})
}

func FuzzMentions(f *testing.F) {
	f.Add("hi @alice and `@bob` ```\n@x\n``` nostr:npub1")
	f.Add("@Ada Lovelace. @@ @")
	members := []member{{"a1", "Alice"}, {"b1", "Bob"}, {"b2", "bob"}, {"c1", "Ada Lovelace"}, {"e1", "É"}}
	f.Fuzz(func(t *testing.T, text string) {
		s := stripCode(text)
		if len(s) != len(text) {
			t.Fatalf("stripCode changed the length: %d -> %d", len(text), len(s))
		}
		if utf8.ValidString(text) && strings.Count(s, "\n") != strings.Count(text, "\n") {
			t.Fatal("stripCode moved line breaks")
		}
		r := resolveAt(s, members)
		for _, pk := range r.Resolved {
			if !contains([]string{"a1", "b1", "b2", "c1", "e1"}, pk) {
				t.Fatalf("resolved unknown pubkey %q", pk)
			}
		}
		for _, pk := range nostrRefs(s) {
			if !nostrkey.IsLowerHex(pk, 64) {
				t.Fatalf("nostrRefs gave %q", pk)
			}
		}
	})
}

func FuzzAuthTag(f *testing.F) {
	f.Add(`["auth","` + strings.Repeat("a", 64) + `","kind=1","` + strings.Repeat("b", 128) + `"]`)
	f.Add("[auth,,,]")
	f.Fuzz(func(t *testing.T, raw string) {
		a, err := parseAuthTag(raw)
		if err != nil {
			return
		}
		again, err := parseAuthTag(a.JSON())
		if err != nil || *again != *a {
			t.Fatalf("round trip of %q: %v", raw, err)
		}
	})
}
