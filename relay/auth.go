package relay

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/nostrgit/nipoa"

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
// one challenge tag equal to challenge, exactly one relay tag naming scheme
// + "://" + host (after normHost, trailing "/" dropped), created_at within
// authWindow of now, valid id and signature.
func checkAuthEvent(ev *nostr.Event, challenge, scheme, host string, now time.Time) error {
	if ev.Kind != nostr.KindClientAuthentication {
		return fmt.Errorf("kind %d is not %d", ev.Kind, nostr.KindClientAuthentication)
	}
	var challenges, relays []string
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "challenge":
			challenges = append(challenges, t[1])
		case "relay":
			relays = append(relays, t[1])
		}
	}
	if len(challenges) != 1 || challenges[0] != challenge {
		return errors.New("challenge tag missing, repeated or wrong")
	}
	if len(relays) != 1 {
		return errors.New("relay tag missing or repeated")
	}
	u, err := url.Parse(strings.TrimSuffix(relays[0], "/"))
	if err != nil || strings.ToLower(u.Scheme) != scheme || normHost(u.Host) != host || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("relay tag %q does not name %s://%s", relays[0], scheme, host)
	}
	if err := checkTime(ev.CreatedAt, now); err != nil {
		return err
	}
	return checkSigned(ev)
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

// attestedOwner returns the owner hex of a NIP-OA tag that vouches for
// agent, or "". The conditions are not applied: they concern the events
// the agent signs, which eventAttestation checks one by one.
func attestedOwner(t nostr.Tag, agent string) string {
	if len(t) != 4 || t[0] != nipoa.TagName {
		return ""
	}
	a, err := nipoa.FromParts(t[1], t[2], t[3])
	if err != nil {
		return ""
	}
	pub, err := nostrkey.ParsePublic(agent)
	if err != nil || a.Verify(pub) != nil {
		return ""
	}
	return a.Owner.Hex()
}

// headerOwner reads an x-auth-tag header (the tag's JSON) for agent.
func headerOwner(h, agent string) string {
	a, err := nipoa.Parse(h)
	if err != nil {
		return ""
	}
	pub, err := nostrkey.ParsePublic(agent)
	if err != nil || a.Verify(pub) != nil {
		return ""
	}
	return a.Owner.Hex()
}

// eventAttestation returns the owner of ev's auth tag when the tag is
// valid for ev's author and its conditions admit ev, or "".
func eventAttestation(ev *nostr.Event) string {
	a, ok, err := nipoa.FromEvent(ev)
	if !ok || err != nil {
		return ""
	}
	return a.Owner.Hex()
}
