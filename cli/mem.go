package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip44"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// NIP-AE (agent engrams): kind 30174, NIP-44 v2 content between agent and
// owner, addressed by workspace.MemoryDTag.

// memBody is a decrypted engram body: core has Profile; a memory has
// Value, nil meaning a tombstone.
type memBody struct {
	Slug    string
	Profile string
	Value   *string
}

// normalizeSlug turns shorthand into a slug: "core" stays, anything else
// gets the mem/ prefix; the result must fit the grammar.
func normalizeSlug(raw string) (string, error) {
	s := raw
	if s != workspace.MemoryCoreSlug && !strings.HasPrefix(s, workspace.MemorySlugPrefix) {
		s = workspace.MemorySlugPrefix + s
	}
	if err := validSlug(s); err != nil {
		return "", userErr("invalid slug %q: %v", raw, err)
	}
	return s, nil
}

// validSlug: core, or mem/ then segments [a-z0-9][a-z0-9_-]{0,63} joined
// by "/", at most maxMemSlugBytes in all.
func validSlug(s string) error {
	if s == workspace.MemoryCoreSlug {
		return nil
	}
	if len(s) > maxMemSlugBytes {
		return fmt.Errorf("longer than %d bytes", maxMemSlugBytes)
	}
	rest, ok := strings.CutPrefix(s, workspace.MemorySlugPrefix)
	if !ok || rest == "" {
		return fmt.Errorf("expected core or mem/<path>")
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == "" || len(seg) > maxMemSegmentBytes {
			return fmt.Errorf("segment %q must be 1-%d bytes", seg, maxMemSegmentBytes)
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
			if !alnum && (i == 0 || (c != '_' && c != '-')) {
				return fmt.Errorf("segment %q: only [a-z0-9] first, then [a-z0-9_-]", seg)
			}
		}
	}
	return nil
}

// encode writes the body exactly as NIP-AE's vectors: slug first, no
// whitespace, only the escapes JSON requires.
func (b memBody) encode() []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"slug":`)
	jsonString(&buf, b.Slug)
	switch {
	case b.Slug == workspace.MemoryCoreSlug:
		buf.WriteString(`,"profile":`)
		jsonString(&buf, b.Profile)
	case b.Value == nil:
		buf.WriteString(`,"value":null`)
	default:
		buf.WriteString(`,"value":`)
		jsonString(&buf, *b.Value)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

func jsonString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(buf, `\u%04x`, r)
			} else {
				buf.WriteRune(r)
			}
		}
	}
	buf.WriteByte('"')
}

// decodeMemBody parses a decrypted body, refusing duplicate member names.
func decodeMemBody(b []byte) (memBody, error) {
	if err := noDuplicateKeys(b); err != nil {
		return memBody{}, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return memBody{}, err
	}
	var body memBody
	if err := json.Unmarshal(raw["slug"], &body.Slug); err != nil {
		return memBody{}, fmt.Errorf("slug is not a string")
	}
	if err := validSlug(body.Slug); err != nil {
		return memBody{}, err
	}
	if body.Slug == workspace.MemoryCoreSlug {
		p, ok := raw["profile"]
		if !ok || json.Unmarshal(p, &body.Profile) != nil || bytes.Equal(bytes.TrimSpace(p), []byte("null")) {
			return memBody{}, fmt.Errorf("core body needs a string profile")
		}
		return body, nil
	}
	v, ok := raw["value"]
	if !ok {
		return memBody{}, fmt.Errorf("memory body needs value")
	}
	if !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return memBody{}, fmt.Errorf("value is not a string")
		}
		body.Value = &s
	}
	return body, nil
}

// noDuplicateKeys walks a JSON document and fails on a repeated member
// name in any object.
func noDuplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				ks, _ := k.(string)
				if seen[ks] {
					return fmt.Errorf("duplicate member %q", ks)
				}
				seen[ks] = true
				if err := walk(); err != nil {
					return err
				}
			}
		case '[':
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token()
		return err
	}
	if err := walk(); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the body")
	}
	return nil
}

// memParty is who reads or writes: the agent (author), the owner (p tag),
// and the conversation key between them.
type memParty struct {
	agent, owner string
	key          [32]byte
}

// memParties resolves agent and owner. Agent side (default): the CLI key
// is the agent and the owner comes from --owner or BUZZ_AUTH_TAG. Owner
// side (--agent X, reads only): the CLI key is the owner.
func memParties(in *inv, allowAgent bool) (memParty, error) {
	var p memParty
	if allowAgent && in.p.has("agent") {
		if in.p.has("owner") {
			return p, userErr("--owner and --agent exclude each other")
		}
		a, err := parsePubkey(in.p.str("agent"))
		if err != nil {
			return p, err
		}
		if a == in.pubkey {
			return p, userErr("--agent must differ from your own key; drop it to read your own memory")
		}
		p.agent, p.owner = a, in.pubkey
	} else {
		p.agent = in.pubkey
		switch {
		case in.p.has("owner"):
			o, err := parsePubkey(in.p.str("owner"))
			if err != nil {
				return p, err
			}
			p.owner = o
		case in.auth != nil:
			p.owner = in.auth.Owner
		default:
			return p, userErr("owner pubkey required: set BUZZ_AUTH_TAG (NIP-OA attestation) or pass --owner")
		}
	}
	their := p.owner
	if p.agent != in.pubkey {
		their = p.agent
	}
	sk, err := in.key.AppendHex(nil)
	if err != nil {
		return p, otherErr("read key: %v", err)
	}
	defer clear(sk)
	k, err := nip44.GenerateConversationKey(their, string(sk))
	if err != nil {
		return p, userErr("no conversation key with %s: %v", their, err)
	}
	p.key = k
	return p, nil
}

// open validates an engram the relay client returned, its id and
// signature checked there (author, one d, one p = owner), decrypts it and
// checks its slug re-derives to its d tag.
func (p memParty) open(ev *nostr.Event) (memBody, bool) {
	if ev.Kind != workspace.KindEngram || ev.PubKey != p.agent {
		return memBody{}, false
	}
	var ds, ps []string
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "d" {
			ds = append(ds, t[1])
		}
		if len(t) >= 2 && t[0] == "p" {
			ps = append(ps, t[1])
		}
	}
	if len(ds) != 1 || !nostrkey.IsLowerHex(ds[0], 64) || len(ps) != 1 || !strings.EqualFold(ps[0], p.owner) {
		return memBody{}, false
	}
	plain, err := nip44.Decrypt(ev.Content, p.key)
	if err != nil {
		return memBody{}, false
	}
	body, err := decodeMemBody([]byte(plain))
	if err != nil || workspace.MemoryDTag(p.key, body.Slug) != ds[0] {
		return memBody{}, false
	}
	return body, true
}

// better is the head rule: newer created_at wins, ties go to the lower id.
func better(a, b *nostr.Event) bool {
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt > b.CreatedAt
	}
	return a.ID < b.ID
}

// memHead fetches the current head of slug; nil when there is none.
func memHead(in *inv, p memParty, slug string) (*nostr.Event, *memBody, error) {
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindEngram}, Authors: []string{p.agent}, Tags: nostr.TagMap{"d": []string{workspace.MemoryDTag(p.key, slug)}, "p": []string{p.owner}}, Limit: memHeadLimit})
	if err != nil {
		return nil, nil, err
	}
	var head *nostr.Event
	var body memBody
	for _, ev := range evs {
		b, ok := p.open(ev)
		if ok && (head == nil || better(ev, head)) {
			head, body = ev, b
		}
	}
	if head == nil {
		return nil, nil, nil
	}
	return head, &body, nil
}

func memSlugArg(in *inv) (string, error) {
	if len(in.p.args) < 1 {
		return "", userErr("missing SLUG; see buzz mem --help")
	}
	return normalizeSlug(in.p.args[0])
}

// memValue is what a body holds: the profile of core, the value of a
// memory; false for a tombstone.
func memValue(b *memBody) (string, bool) {
	if b.Slug == workspace.MemoryCoreSlug {
		return b.Profile, true
	}
	if b.Value == nil {
		return "", false
	}
	return *b.Value, true
}

func runMemGet(in *inv) error {
	v, err := memRead(in)
	if err != nil {
		return err
	}
	_, err = io.WriteString(in.out, v)
	return err
}

// runMemHash prints the SHA-256 of the value as one hex line, ready for
// `buzz mem patch --base-hash "$(buzz mem hash SLUG)"`.
func runMemHash(in *inv) error {
	v, err := memRead(in)
	if err != nil {
		return err
	}
	_, err = io.WriteString(in.out, sha256Hex(v)+"\n")
	return err
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// runMemPatch applies a unified diff to a memory, strictly at the declared
// lines, guarded by the hash of the value the diff was made against.
func runMemPatch(in *inv) error {
	slug, err := memSlugArg(in)
	if err != nil {
		return err
	}
	base, noBase := in.p.str("base-hash"), in.p.boolean("no-base-hash")
	switch {
	case base != "" && noBase:
		return userErr("--base-hash and --no-base-hash exclude each other")
	case base == "" && !noBase:
		return userErr("missing --base-hash <sha256> (from buzz mem hash %s); pass --no-base-hash to skip the check", in.p.args[0])
	case base != "" && !nostrkey.IsLowerHex(strings.ToLower(base), 64):
		return userErr("--base-hash must be a 64-character hex SHA-256")
	}
	var diff []byte
	if f := in.p.str("patch-file"); f != "" {
		diff, err = readFileCapped(f, maxMemBodyBytes*2)
	} else {
		diff, err = io.ReadAll(io.LimitReader(in.env.In(), maxMemBodyBytes*2+1))
		if err == nil && len(diff) > maxMemBodyBytes*2 {
			err = userErr("patch on stdin passes %d bytes", maxMemBodyBytes*2)
		}
	}
	if err != nil {
		return err
	}
	if len(diff) == 0 {
		return userErr("refusing to apply an empty patch (an earlier pipeline step probably failed)")
	}
	hunks, err := parsePatch(string(diff))
	if err != nil {
		return userErr("malformed unified diff: %v", err)
	}
	p, err := memParties(in, false)
	if err != nil {
		return err
	}
	_, body, err := memHead(in, p, slug)
	if err != nil {
		return err
	}
	if body == nil {
		return notFound("not found: %s", slug)
	}
	current, ok := memValue(body)
	if !ok {
		return notFound("tombstoned: %s", slug)
	}
	if base != "" && sha256Hex(current) != strings.ToLower(base) {
		return &Error{Category: catConflict, Message: fmt.Sprintf("conflict: %s changed since the patch was made (sha256 now %s, patch made against %s); fetch it again and re-diff", slug, sha256Hex(current), strings.ToLower(base))}
	}
	next, err := applyPatch(current, hunks)
	if err != nil {
		return userErr("patch does not apply to %s: %v (context must match at the declared lines)", slug, err)
	}
	switch {
	case next == current:
		return userErr("patch changes nothing in %s; nothing was written", slug)
	case next == "" && !in.p.boolean("allow-empty"):
		return userErr("refusing to write an empty value; pass --allow-empty, or buzz mem rm to tombstone")
	}
	if in.p.boolean("dry-run") {
		return writeJSON(in.out, map[string]any{"slug": slug, "sha256": sha256Hex(next), "dry_run": true})
	}
	nb := memBody{Slug: slug, Value: &next}
	if slug == workspace.MemoryCoreSlug {
		nb = memBody{Slug: slug, Profile: next}
	}
	return memWrite(in, nb)
}

func memRead(in *inv) (string, error) {
	slug, err := memSlugArg(in)
	if err != nil {
		return "", err
	}
	p, err := memParties(in, true)
	if err != nil {
		return "", err
	}
	_, body, err := memHead(in, p, slug)
	if err != nil {
		return "", err
	}
	if body == nil {
		return "", notFound("not found: %s", slug)
	}
	v, ok := memValue(body)
	if !ok {
		return "", notFound("tombstoned: %s", slug)
	}
	return v, nil
}

func runMemLs(in *inv) error {
	p, err := memParties(in, true)
	if err != nil {
		return err
	}
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindEngram}, Authors: []string{p.agent}, Tags: nostr.TagMap{"p": []string{p.owner}}, Limit: memLsLimit})
	if err != nil {
		return err
	}
	type head struct {
		ev   *nostr.Event
		body memBody
	}
	heads := map[string]head{}
	for _, ev := range evs {
		b, ok := p.open(ev)
		if !ok {
			continue
		}
		if h, ok := heads[b.Slug]; !ok || better(ev, h.ev) {
			heads[b.Slug] = head{ev, b}
		}
	}
	type listing struct {
		Slug      string `json:"slug"`
		EventID   string `json:"event_id"`
		CreatedAt int64  `json:"created_at"`
	}
	out := []listing{}
	for slug, h := range heads {
		if slug == workspace.MemoryCoreSlug || h.body.Value == nil {
			continue
		}
		out = append(out, listing{slug, h.ev.ID, int64(h.ev.CreatedAt)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return writeJSON(in.out, out)
}

func runMemSet(in *inv) error {
	slug, err := memSlugArg(in)
	if err != nil {
		return err
	}
	if len(in.p.args) < 2 {
		return userErr("missing VALUE (or - to read stdin); see buzz mem set --help")
	}
	value := in.p.args[1]
	if value == "-" {
		b, err := io.ReadAll(io.LimitReader(in.env.In(), maxMemBodyBytes+1))
		if err != nil {
			return otherErr("read stdin: %v", err)
		}
		if len(b) > maxMemBodyBytes {
			return userErr("stdin value exceeds the %d-byte NIP-44 plaintext limit", maxMemBodyBytes)
		}
		if len(b) == 0 && !in.p.boolean("allow-empty") {
			return userErr("refusing to write an empty value from stdin (an earlier pipeline step probably failed); pass --allow-empty, or use buzz mem rm to tombstone")
		}
		value = string(b)
	}
	body := memBody{Slug: slug, Value: &value}
	if slug == workspace.MemoryCoreSlug {
		body = memBody{Slug: slug, Profile: value}
	}
	return memWrite(in, body)
}

func runMemRm(in *inv) error {
	slug, err := memSlugArg(in)
	if err != nil {
		return err
	}
	if slug == workspace.MemoryCoreSlug {
		return userErr("core cannot be tombstoned; overwrite it with buzz mem set core")
	}
	return memWrite(in, memBody{Slug: slug})
}

// memWrite encrypts body, signs it with created_at = max(now, head+1) so it
// supersedes the head, and reports a superseded write as a conflict.
func memWrite(in *inv, body memBody) error {
	plain := body.encode()
	if len(plain) > maxMemBodyBytes {
		return userErr("memory body is %d bytes, over the %d-byte NIP-44 plaintext limit", len(plain), maxMemBodyBytes)
	}
	p, err := memParties(in, false)
	if err != nil {
		return err
	}
	head, _, err := memHead(in, p, body.Slug)
	if err != nil {
		return err
	}
	ct, err := nip44.Encrypt(string(plain), p.key)
	if err != nil {
		return otherErr("encrypt memory: %v", err)
	}
	ev := &nostr.Event{Kind: workspace.KindEngram, Content: ct, CreatedAt: successor(head),
		Tags: nostr.Tags{{"d", workspace.MemoryDTag(p.key, body.Slug)}, {"p", p.owner}}}
	res, err := signAndPublish(in, ev)
	if err != nil {
		return err
	}
	if strings.HasPrefix(res.Message, "duplicate") {
		return &Error{Category: catConflict, Message: "conflict: the relay kept a newer version of " + body.Slug + " (" + res.Message + "); read it and try again"}
	}
	v, _ := memValue(&body)
	return writeJSON(in.out, map[string]any{"slug": body.Slug, "event_id": ev.ID, "created_at": int64(ev.CreatedAt), "sha256": sha256Hex(v)})
}
