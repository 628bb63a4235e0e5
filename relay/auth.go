package relay

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
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

// attestation is a NIP-OA owner attestation: the owner lets the agent key
// act for it under conditions.
type attestation struct {
	owner, conditions, sig string
}

const oaPrefix = "nostr:agent-auth:"

// parseAttestation reads ["auth", owner, conditions, sig].
func parseAttestation(t nostr.Tag) (attestation, bool) {
	if len(t) != 4 || t[0] != "auth" || !nostr.IsValid32ByteHex(t[1]) || len(t[3]) != 128 {
		return attestation{}, false
	}
	return attestation{owner: t[1], conditions: t[2], sig: t[3]}, true
}

// verify checks the owner's BIP-340 signature over
// SHA256("nostr:agent-auth:" || agent || ":" || conditions), and that the
// owner is not the agent itself.
func (a attestation) verify(agent string) bool {
	if a.owner == agent || a.owner != strings.ToLower(a.owner) {
		return false
	}
	pkb, err := hex.DecodeString(a.owner)
	if err != nil {
		return false
	}
	pk, err := schnorr.ParsePubKey(pkb)
	if err != nil {
		return false
	}
	sb, err := hex.DecodeString(a.sig)
	if err != nil {
		return false
	}
	sig, err := schnorr.ParseSignature(sb)
	if err != nil {
		return false
	}
	h := sha256.Sum256([]byte(oaPrefix + agent + ":" + a.conditions))
	return sig.Verify(h[:], pk)
}

// allows reports whether the conditions admit an event of kind created at
// at. An empty condition string admits everything; a clause that does not
// parse admits nothing.
func (a attestation) allows(kind int, at nostr.Timestamp) bool {
	if a.conditions == "" {
		return true
	}
	for _, clause := range strings.Split(a.conditions, "&") {
		var op, num string
		switch {
		case strings.HasPrefix(clause, "kind="):
			op, num = "kind", clause[5:]
		case strings.HasPrefix(clause, "created_at<"):
			op, num = "<", clause[11:]
		case strings.HasPrefix(clause, "created_at>"):
			op, num = ">", clause[11:]
		default:
			return false
		}
		n, err := strconv.ParseUint(num, 10, 32)
		if err != nil {
			return false
		}
		switch op {
		case "kind":
			if uint64(kind) != n {
				return false
			}
		case "<":
			if uint64(at) >= n {
				return false
			}
		case ">":
			if uint64(at) <= n {
				return false
			}
		}
	}
	return true
}

// eventAttestation returns the owner of a valid auth tag on ev whose
// conditions admit ev, or "".
func eventAttestation(ev *nostr.Event) string {
	for _, t := range ev.Tags {
		if len(t) > 0 && t[0] == "auth" {
			a, ok := parseAttestation(t)
			if ok && a.verify(ev.PubKey) && a.allows(ev.Kind, ev.CreatedAt) {
				return a.owner
			}
			return ""
		}
	}
	return ""
}
