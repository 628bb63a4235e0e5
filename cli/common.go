package cli

import (
	"io"
	"os"
	"strconv"
	"strings"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nipoa"
	"buzzbox/internal/workspace/relayclient"

	"github.com/nbd-wtf/go-nostr"
)

func runKeygen(in *inv) error {
	s, err := nostrkey.NewSecret()
	if err != nil {
		return otherErr("generate key: %v", err)
	}
	defer s.Zero()
	h, err := s.AppendHex(nil)
	if err != nil {
		return otherErr("generate key: %v", err)
	}
	defer clear(h)
	nsec, err := nip19EncodeSecret(string(h))
	if err != nil {
		return otherErr("encode key: %v", err)
	}
	pub := s.Public()
	return writeJSON(in.out, struct {
		Nsec   string `json:"nsec"`
		Npub   string `json:"npub"`
		Pubkey string `json:"pubkey"`
	}{nsec, pub.Npub(), pub.Hex()})
}

func runWhoami(in *inv) error {
	pub := in.key.Public()
	out := map[string]any{"pubkey": pub.Hex(), "npub": pub.Npub()}
	if in.auth != nil {
		out["owner"] = in.auth.Owner
	}
	return writeJSON(in.out, out)
}

// need returns a required string flag.
func need(in *inv, name string) (string, error) {
	v := in.p.str(name)
	if !in.p.has(name) || v == "" {
		return "", userErr("--%s is required", name)
	}
	return v, nil
}

func needChannel(in *inv) (string, error) {
	v, err := need(in, "channel")
	if err != nil {
		return "", err
	}
	return parseUUID(v)
}

func needEvent(in *inv) (string, error) {
	v, err := need(in, "event")
	if err != nil {
		return "", err
	}
	return parseHexID(v)
}

// readText resolves a TEXT|- flag value: "-" reads stdin up to max bytes
// and refuses more.
func readText(in *inv, name string, max int) (string, error) {
	if !in.p.has(name) {
		return "", userErr("--%s is required", name)
	}
	v := in.p.str(name)
	if v == "-" {
		b, err := io.ReadAll(io.LimitReader(in.env.In(), int64(max)+1))
		if err != nil {
			return "", otherErr("read stdin: %v", err)
		}
		v = string(b)
	}
	if len(v) > max {
		return "", userErr("--%s is %d bytes or more, over the %d-byte limit", name, len(v), max)
	}
	return v, nil
}

// clampLimit reads --limit with a default and a ceiling; 0 means default.
func clampLimit(in *inv, def, max int64) (int64, error) {
	n, err := in.p.nonNegative("limit", def)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		n = def
	}
	return min(n, max), nil
}

// parseKinds reads a comma-separated kind list.
func parseKinds(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		k, err := strconv.Atoi(f)
		if err != nil || k < 0 || k > 65535 {
			return nil, userErr("--kinds: %q is not an event kind", f)
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, userErr("--kinds is empty")
	}
	return out, nil
}

// fetchOne fetches an event by id; nil when the relay does not have it.
func fetchOne(in *inv, id string) (*nostr.Event, error) {
	evs, err := in.c.Query(in.ctx, nostr.Filter{IDs: []string{id}, Limit: 1})
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if ev.ID == id {
			return ev, nil
		}
	}
	return nil, nil
}

// fetchTarget fetches the event a command acts on: absent is not_found.
func fetchTarget(in *inv, id string) (*nostr.Event, error) {
	ev, err := fetchOne(in, id)
	if err != nil {
		return nil, err
	}
	if ev == nil {
		return nil, notFound("event %s not found", id)
	}
	return ev, nil
}

// sign fills in the event and signs it with the CLI key, appending the
// NIP-OA tag when configured.
func (in *inv) sign(ev *nostr.Event) error {
	if ev.CreatedAt == 0 {
		ev.CreatedAt = nostr.Now()
	}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	if in.auth != nil {
		ev.Tags = append(ev.Tags, in.auth.Tag())
	}
	n := 0
	for _, t := range ev.Tags {
		if len(t) > 0 && t[0] == nipoa.TagName {
			n++
		}
	}
	if in.auth != nil && n != 1 {
		return otherErr("internal error: event would carry %d auth tags", n)
	}
	if err := in.key.SignEvent(ev); err != nil {
		return otherErr("sign event: %v", err)
	}
	return nil
}

// timestamp is a filter's since or until.
func timestamp(n int64) *nostr.Timestamp {
	t := nostr.Timestamp(n)
	return &t
}

// publish signs and sends ev and prints the relay's answer.
func publishAndPrint(in *inv, ev *nostr.Event) error {
	res, err := signAndPublish(in, ev)
	if err != nil {
		return err
	}
	return writeJSON(in.out, res)
}

func signAndPublish(in *inv, ev *nostr.Event) (relayclient.Result, error) {
	if err := in.sign(ev); err != nil {
		return relayclient.Result{}, err
	}
	return in.c.Publish(in.ctx, ev)
}

// readFileCapped reads a file the user named, refusing more than max bytes.
func readFileCapped(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, userErr("cannot read %s: %v", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, userErr("cannot read %s: %v", path, err)
	}
	if len(b) > max {
		return nil, userErr("%s passes the %d-byte limit", path, max)
	}
	return b, nil
}
