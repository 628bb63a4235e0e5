package nostrkey

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// Test vectors of the nostrgit spec §5.6.
const (
	k3     = "0000000000000000000000000000000000000000000000000000000000000003"
	pk3    = "f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9"
	k1     = "0000000000000000000000000000000000000000000000000000000000000001"
	pk1    = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"
	hashV  = "a11a32173aa35125aaefaad8854f2eda5a144268a4a355905c841f79ff44aa18"
	sigV   = "c35062148d95b820068c18ab9cf69a8dd2322c606890366d084df7617570b96b7a1aca0a8fcabb2eb4032ebbdf5b43e6bf8633e0d85bcecce28a9e08705b875f"
	curveN = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"
)

func nsecOf(t *testing.T, h string) string {
	t.Helper()
	s, err := nip19.EncodePrivateKey(h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseSecret(t *testing.T) {
	for _, in := range []string{k3, strings.ToUpper(k3), "  " + k3 + "\n", nsecOf(t, k3), nsecOf(t, k3) + "\r\n", strings.ToUpper(nsecOf(t, k3))} {
		s, err := ParseSecret(in)
		if err != nil {
			t.Fatalf("ParseSecret(%q) error %v", in, err)
		}
		if got := s.Public().Hex(); got != pk3 {
			t.Errorf("ParseSecret(%q).Public() = %s; want %s", in, got, pk3)
		}
	}
}

func TestParseSecretInvalid(t *testing.T) {
	npub, _ := nip19.EncodePublicKey(pk3)
	nsec := nsecOf(t, k3)
	for _, in := range []string{
		"", "   ", "abc",
		strings.Repeat("0", 64), // zero scalar
		curveN,                  // equal to the order
		strings.Repeat("g", 64),
		k3 + "00",
		npub,
		nsec[:len(nsec)-1] + "q", // bad checksum
	} {
		s, err := ParseSecret(in)
		if err == nil {
			t.Errorf("ParseSecret(%q) = %v; want error", in, s)
			continue
		}
		var ke *KeyError
		if !errors.As(err, &ke) {
			t.Errorf("ParseSecret(%q) error %T; want *KeyError", in, err)
		}
		if !strings.HasPrefix(err.Error(), "invalid nostr private key: ") {
			t.Errorf("ParseSecret(%q) error %q; want prefix %q", in, err, "invalid nostr private key: ")
		}
		if len(in) > 8 && strings.Contains(err.Error(), strings.TrimSpace(in)) {
			t.Errorf("ParseSecret(%q) error %q repeats the input", in, err)
		}
	}
}

func TestSecretRedacts(t *testing.T) {
	s, err := ParseSecret(k3)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("key", "secret", s)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("key", "secret", s)
	for _, f := range []string{"%v", "%s", "%x", "%X", "%#v", "%+v", "%q", "%d"} {
		fmt.Fprintf(&buf, f+"\n", s)
	}
	fmt.Fprintln(&buf, s, *s)
	fmt.Fprintf(&buf, "%v %d %x %+v\n", *s, *s, *s, struct{ K Secret }{*s})
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("key", "value", *s)
	out := buf.String()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, redacted) {
			t.Errorf("line without the redaction marker: %q", line)
		}
	}
	if strings.Contains(out, "[0 0 0") || strings.Contains(out, "00000000") {
		t.Errorf("redacted output shows key bytes:\n%s", out)
	}
	if strings.Contains(out, "0003") || strings.Contains(out, "nsec1") {
		t.Errorf("redacted output shows the key:\n%s", out)
	}
	if !strings.Contains(out, redacted) {
		t.Errorf("output lacks the redaction marker:\n%s", out)
	}
}

func TestSignVector(t *testing.T) {
	s, err := ParseSecret(k3)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := hex.DecodeString(hashV)
	sig, err := s.SignAux(h, [32]byte{})
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(sig[:]); got != sigV {
		t.Errorf("SignAux(vector) = %s; want %s", got, sigV)
	}
	if !s.Public().Verify(h, sig[:]) {
		t.Error("Verify(vector signature) = false")
	}
	fresh, err := s.Sign(h)
	if err != nil {
		t.Fatal(err)
	}
	if fresh == sig {
		t.Error("Sign with fresh aux gave the zero-aux signature")
	}
	if !s.Public().Verify(h, fresh[:]) {
		t.Error("Verify(fresh signature) = false")
	}
	h[0] ^= 1
	if s.Public().Verify(h, sig[:]) {
		t.Error("Verify(changed hash) = true")
	}
}

func TestZero(t *testing.T) {
	s, _ := ParseSecret(k3)
	s.Zero()
	if !s.Public().IsZero() {
		t.Error("Public after Zero is not zero")
	}
	if _, err := s.SignAux(make([]byte, 32), [32]byte{}); !errors.Is(err, ErrZeroed) {
		t.Errorf("SignAux after Zero = %v; want ErrZeroed", err)
	}
	if s.k != [32]byte{} {
		t.Error("key bytes remain after Zero")
	}
	var nilS *Secret
	nilS.Zero() // nil-safe
}

func TestPublicConversions(t *testing.T) {
	npub, err := HexToNpub(pk3)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(npub, "npub1") {
		t.Fatalf("HexToNpub = %q", npub)
	}
	back, err := NpubToHex(npub)
	if err != nil || back != pk3 {
		t.Errorf("NpubToHex(%s) = %s, %v; want %s", npub, back, err, pk3)
	}
	for _, in := range []string{pk3, strings.ToUpper(pk3), npub} {
		p, err := ParsePublic(in)
		if err != nil || p.Hex() != pk3 {
			t.Errorf("ParsePublic(%q) = %s, %v; want %s", in, p, err, pk3)
		}
	}
	for _, in := range []string{"", "Test <t@x>", pk3[:63], strings.Repeat("0", 64), nsecOf(t, k3)} {
		if _, err := ParsePublic(in); err == nil {
			t.Errorf("ParsePublic(%q) succeeded; want error", in)
		}
	}
	if _, err := NpubToHex(pk3); err == nil {
		t.Error("NpubToHex(hex) succeeded; want error")
	}
}

func writeKey(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, content string
		mode          os.FileMode
	}{
		{"hex600", k3 + "\n", 0o600},
		{"hex400", k3, 0o400},
		{"nsec", nsecOf(t, k3) + "\n", 0o600},
	} {
		p := writeKey(t, dir, c.name, c.content, c.mode)
		s, err := ReadFile(p, FileRules{NoSymlink: true, OwnerOnly: true})
		if err != nil {
			t.Errorf("ReadFile(%s) error %v", c.name, err)
			continue
		}
		if s.Public().Hex() != pk3 {
			t.Errorf("ReadFile(%s) key %s; want %s", c.name, s.Public(), pk3)
		}
	}
}

func TestWriteFile(t *testing.T) {
	s, _ := ParseSecret(k3)
	p := filepath.Join(t.TempDir(), ".nostr-key")
	if err := WriteFile(p, s); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("WriteFile mode %o; want 0600", fi.Mode().Perm())
	}
	back, err := ReadFile(p, FileRules{NoSymlink: true, OwnerOnly: true})
	if err != nil || !back.Equal(s) {
		t.Errorf("ReadFile(WriteFile(k3)) = %v, %v", back.Public(), err)
	}
	if err := WriteFile(p, s); err == nil {
		t.Error("WriteFile over an existing file succeeded; want error")
	}
}

func env(kv ...string) proc.Env { return proc.Env{Environ: kv} }

func TestForGit(t *testing.T) {
	dir := t.TempDir()
	file := writeKey(t, dir, "k", k1+"\n", 0o600)
	bad := writeKey(t, dir, "bad", k1+"\n", 0o644)
	nsec3 := nsecOf(t, k3)
	fileFn := func(p string) func() (string, error) { return func() (string, error) { return p, nil } }
	cases := []struct {
		name     string
		env      proc.Env
		keyfile  func() (string, error)
		wantPK   string
		wantSrc  string
		wantWarn bool
		wantErr  string
	}{
		{"nostr env", env("NOSTR_PRIVATE_KEY=" + k3), fileFn(file), pk3, workspace.EnvNostrPrivateKey, false, ""},
		{"buzz env", env("BUZZ_PRIVATE_KEY=" + nsec3), fileFn(file), pk3, workspace.EnvPrivateKey, false, ""},
		{"both same", env("NOSTR_PRIVATE_KEY="+k3, "BUZZ_PRIVATE_KEY="+nsec3), nil, pk3, workspace.EnvNostrPrivateKey, false, ""},
		{"both differ", env("NOSTR_PRIVATE_KEY="+k3, "BUZZ_PRIVATE_KEY="+k1), nil, pk3, workspace.EnvNostrPrivateKey, true, ""},
		{"empty env falls through", env("NOSTR_PRIVATE_KEY=", "BUZZ_PRIVATE_KEY="), fileFn(file), pk1, "keyfile " + file, false, ""},
		{"file", env(), fileFn(file), pk1, "keyfile " + file, false, ""},
		{"insecure file", env(), fileFn(bad), "", "", false, "insecure permissions"},
		{"nothing", env(), fileFn(""), "", "", false, ErrNoKey.Error()},
		{"nil keyfile", env(), nil, "", "", false, ErrNoKey.Error()},
		{"keyfile error", env(), func() (string, error) { return "", errors.New("git config failed") }, "", "", false, "git config failed"},
		{"invalid env", env("NOSTR_PRIVATE_KEY=xyz"), fileFn(file), "", "", false, "invalid nostr private key in NOSTR_PRIVATE_KEY"},
		{"oversize env", env("BUZZ_PRIVATE_KEY=" + strings.Repeat("a", 129)), nil, "", "", false, "BUZZ_PRIVATE_KEY exceeds 128-byte size limit"},
	}
	for _, c := range cases {
		l, err := ForGit(c.env, c.keyfile, FileRules{})
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: ForGit error %v; want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: ForGit error %v", c.name, err)
			continue
		}
		if got := l.Secret.Public().Hex(); got != c.wantPK || l.Source != c.wantSrc {
			t.Errorf("%s: ForGit = %s from %q; want %s from %q", c.name, got, l.Source, c.wantPK, c.wantSrc)
		}
		if warned := len(l.Warnings) > 0; warned != c.wantWarn {
			t.Errorf("%s: ForGit warnings %q; want warning %v", c.name, l.Warnings, c.wantWarn)
		}
		for _, w := range l.Warnings {
			if !strings.HasPrefix(w, "warning:") {
				t.Errorf("%s: warning %q lacks the warning: prefix", c.name, w)
			}
		}
	}
	if _, err := ForGit(env(), fileFn(""), FileRules{}); !errors.Is(err, ErrNoKey) {
		t.Errorf("ForGit(no key) = %v; want ErrNoKey", err)
	}
}

func TestForCLI(t *testing.T) {
	file := writeKey(t, t.TempDir(), "k", k1, 0o600)
	cases := []struct {
		name, flag string
		env        proc.Env
		wantPK     string
		wantErr    string
	}{
		{"flag wins", k3, env("BUZZ_PRIVATE_KEY=" + k1), pk3, ""},
		{"env", "", env("BUZZ_PRIVATE_KEY="+k3, "BUZZ_KEYFILE="+file), pk3, ""},
		{"file", "", env("BUZZ_KEYFILE=" + file), pk1, ""},
		{"nostr env ignored", "", env("NOSTR_PRIVATE_KEY=" + k3), "", ErrNoKey.Error()},
		{"bad flag", "nope", env(), "", "invalid nostr private key in --private-key"},
	}
	for _, c := range cases {
		l, err := ForCLI(c.env, c.flag)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: ForCLI error %v; want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || l.Secret.Public().Hex() != c.wantPK {
			t.Errorf("%s: ForCLI = %v, %v; want %s", c.name, l.Secret.Public(), err, c.wantPK)
		}
	}
}

func FuzzParseSecret(f *testing.F) {
	for _, s := range []string{k3, "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5", "", "nsec1", strings.Repeat("f", 64), " \n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSecret(in)
		if err != nil {
			if len(strings.TrimSpace(in)) >= 16 && strings.Contains(err.Error(), strings.TrimSpace(in)) {
				t.Fatalf("error %q repeats the input", err)
			}
			return
		}
		h, err := s.AppendHex(nil)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseSecretBytes(h)
		if err != nil || !again.Equal(s) || again.Public() != s.Public() {
			t.Fatalf("round trip of %q failed: %v", in, err)
		}
	})
}

func FuzzParsePublic(f *testing.F) {
	for _, s := range []string{pk3, "npub1lycg5qvjtrp3qjf5f7zl38djxg6m2z3k7dcm86ucxhm7gsvgdrw3q8ayr9f", "", "npub1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParsePublic(in)
		if err != nil {
			return
		}
		again, err := ParsePublic(p.Npub())
		if err != nil || again != p {
			t.Fatalf("npub round trip of %q failed: %v", in, err)
		}
	})
}

func TestSignEvent(t *testing.T) {
	s, _ := ParseSecret(k3)
	evt := &nostr.Event{Kind: 1, CreatedAt: 1700000000, Content: "hi"}
	if err := s.SignEvent(evt); err != nil {
		t.Fatal(err)
	}
	if evt.PubKey != pk3 || !evt.CheckID() {
		t.Errorf("SignEvent: pubkey %s, id ok %v", evt.PubKey, evt.CheckID())
	}
	if ok, err := evt.CheckSignature(); !ok {
		t.Errorf("SignEvent: signature does not verify: %v", err)
	}
}

func TestParsePublicHidesSecrets(t *testing.T) {
	nsec := nsecOf(t, k3)
	for _, f := range []func(string) error{
		func(s string) error { _, err := ParsePublic(s); return err },
		func(s string) error { _, err := NpubToHex(s); return err },
		func(s string) error { _, err := HexToNpub(s); return err },
	} {
		if err := f(nsec); err == nil || strings.Contains(err.Error(), nsec[5:20]) {
			t.Errorf("error %v shows the nsec", err)
		}
	}
}

func TestNewSecret(t *testing.T) {
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSecret()
	if a.Equal(b) || a.Public() == b.Public() || !a.Public().Valid() {
		t.Error("two fresh keys are equal or invalid")
	}
	h, _ := a.AppendHex(nil)
	back, err := ParseSecretBytes(h)
	if err != nil || !back.Equal(a) {
		t.Errorf("fresh key does not round-trip: %v", err)
	}
}
