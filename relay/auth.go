package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
	"buzzbox/internal/workspace/nipoa"

	"github.com/nbd-wtf/go-nostr"
)

// normHost folds the spellings of one host: lower case, and the loopback
// names localhost, ::1 and 127.0.0.1 become 127.0.0.1. The port is kept.
// Distinct domains never merge.
func normHost(hostport string) string {
	hostport = strings.ToLower(hostport)
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		}
	}
	switch host {
	case "localhost", "::1", "127.0.0.1":
		host = "127.0.0.1"
	}
	if port == "" && strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	if port == "" {
		return host
	}
	return net.JoinHostPort(host, port)
}

// checkAuthEvent applies the NIP-42 rules to a kind 22242 event: exactly
// one challenge tag equal to challenge, exactly one relay tag naming one of
// the relay's own base URLs (bases, as scheme://host[:port]; compared after
// nip98.NormalizeURL, so loopback spellings, case, a default port and a
// trailing "/" do not matter), created_at within authWindow of now, valid
// id and signature.
func checkAuthEvent(ev *nostr.Event, challenge string, bases []string, now time.Time) error {
	if ev.Kind != workspace.KindAuth {
		return fmt.Errorf("kind %d is not %d", ev.Kind, workspace.KindAuth)
	}
	var challenges, relays []string
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case workspace.TagAuthChallenge:
			challenges = append(challenges, t[1])
		case workspace.TagAuthRelay:
			relays = append(relays, t[1])
		}
	}
	if len(challenges) != 1 || challenges[0] != challenge {
		return errors.New("challenge tag missing, repeated or wrong")
	}
	if len(relays) != 1 {
		return errors.New("relay tag missing or repeated")
	}
	if !namesRelay(relays[0], bases) {
		want := "this relay"
		if len(bases) > 0 {
			want = bases[0]
		}
		return fmt.Errorf("relay tag %q does not name %s", relays[0], want)
	}
	if err := checkTime(ev.CreatedAt, now); err != nil {
		return err
	}
	return checkSigned(ev)
}

// namesRelay reports whether a relay tag names one of bases.
func namesRelay(tag string, bases []string) bool {
	u, err := url.Parse(tag)
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return false
	}
	for _, b := range bases {
		if nip98.SameURL(tag, b) {
			return true
		}
	}
	return false
}

func checkTime(at nostr.Timestamp, now time.Time) error {
	d := now.Sub(at.Time())
	if d > authWindow || d < -authWindow {
		return fmt.Errorf("created_at %d is more than %s from now", at, authWindow)
	}
	return nil
}

func checkSigned(ev *nostr.Event) error {
	if !ev.CheckID() {
		return errors.New("id is computed incorrectly")
	}
	if ok, err := ev.CheckSignature(); err != nil || !ok {
		return errors.New("signature is invalid")
	}
	return nil
}

// Owner attestations (NIP-OA) as the relay applies them. An attestation
// presented to log in (the auth tag of an AUTH event) or with a request
// (the auth tag of a NIP-98 token, an x-auth-tag header) is a grant: while
// it holds, the agent has its owner's membership. Its conditions bound the
// grant:
//
//   - created_at< and created_at> clauses are checked against the relay's
//     clock at every use, not only at login: a websocket whose grant
//     expires stops reading and writing as the owner's agent then. (NIP-OA
//     clauses constrain the events' own created_at, which the agent
//     chooses; the relay needs wall-clock expiry and enforces it itself, as
//     the NIP asks of relays that want it.)
//   - every event written under the grant must satisfy all clauses against
//     its own kind and created_at, as NIP-OA defines; kind= clauses thus
//     limit what the agent may write, not what it may read.
//   - git access is not an event kind, so a grant with kind= clauses gives
//     none.
//
// An agent that is a member on its own needs no grant, and its rights do
// not shrink because it presented one.

// attestedGrant returns the NIP-OA tag t when it is well formed and its
// owner signature verifies for agent; its conditions are not applied yet.
func attestedGrant(t nostr.Tag, agent string) (*nipoa.Tag, bool) {
	if len(t) != 4 || t[0] != nipoa.TagName {
		return nil, false
	}
	a, err := nipoa.FromParts(t[1], t[2], t[3])
	if err != nil {
		return nil, false
	}
	pub, err := nostrkey.ParsePublic(agent)
	if err != nil || a.Verify(pub) != nil {
		return nil, false
	}
	return &a, true
}

// headerGrant reads an x-auth-tag header (the tag's JSON) for agent.
func headerGrant(h, agent string) (*nipoa.Tag, bool) {
	t, err := nipoa.ParseShape(h)
	if err != nil {
		return nil, false
	}
	return attestedGrant(t, agent)
}

// grantOwner returns the owner of grant g when its time clauses hold at
// now, else "" and the reason.
func grantOwner(g *nipoa.Tag, now time.Time) (string, error) {
	if g == nil {
		return "", nil
	}
	if err := g.CheckTime(now.Unix()); err != nil {
		return "", fmt.Errorf("owner attestation does not hold at relay time: %w", err)
	}
	return g.Owner.Hex(), nil
}

// eventAttestation returns the owner of ev's auth tag when the tag is
// valid for ev's author, its conditions admit ev and its time clauses
// hold at now, or "".
func eventAttestation(ev *nostr.Event, now time.Time) string {
	a, ok, err := nipoa.FromEvent(ev)
	if !ok || err != nil || a.CheckTime(now.Unix()) != nil {
		return ""
	}
	return a.Owner.Hex()
}

type grantKey struct{}

// withGrant records the grant a bridge request presented.
func withGrant(ctx context.Context, g *nipoa.Tag) context.Context {
	return context.WithValue(ctx, grantKey{}, g)
}

// grantOf finds the grant of a bridge request or a websocket, or nil.
func grantOf(ctx context.Context) *nipoa.Tag {
	if g, ok := ctx.Value(grantKey{}).(*nipoa.Tag); ok {
		return g
	}
	if c := connOf(ctx); c != nil {
		return c.attestation()
	}
	return nil
}

// grantVerdict applies the caller's grant to an event it writes. It returns
// "" when the caller does not write under a grant (an open relay, a member
// on its own, no grant, an owner who is no member) or the grant admits ev;
// else the OK reason.
func (r *Relay) grantVerdict(ctx context.Context, c caller, ev *nostr.Event) string {
	if r.cfg.Open || c.pubkey == "" || r.member(caller{pubkey: c.pubkey}) {
		return ""
	}
	g := grantOf(ctx)
	if g == nil || !r.member(caller{pubkey: g.Owner.Hex()}) {
		return ""
	}
	if _, err := grantOwner(g, r.cfg.Now()); err != nil {
		return "restricted: " + err.Error() + "; ask the owner for a new one"
	}
	if err := g.CheckEvent(ev.Kind, int64(ev.CreatedAt)); err != nil {
		return "restricted: owner attestation does not cover this event: " + err.Error()
	}
	return ""
}

// explainGate replaces gate's "not a relay member" with the reason when
// the caller presented its member owner's attestation and only the
// attestation's time clauses keep it out, so that the agent learns to ask
// for a new one.
func (r *Relay) explainGate(ctx context.Context, c caller, msg string) string {
	if !strings.HasPrefix(msg, "restricted: not a relay member") || c.pubkey == "" {
		return msg
	}
	g := grantOf(ctx)
	if g == nil || !r.member(caller{pubkey: g.Owner.Hex()}) {
		return msg
	}
	if _, err := grantOwner(g, r.cfg.Now()); err != nil {
		return "restricted: " + err.Error() + "; ask the owner for a new one"
	}
	return msg
}
