package mcpclient

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

// TestClientAssertionVerifies: private_key_jwt assertions from PKCS#8 EC
// and RSA keys verify with the public key and carry iss = sub = client id,
// the audience, and a short lifetime.
func TestClientAssertionVerifies(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, key := range []crypto.Signer{ec, rk} {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		signer, alg, err := parseSigningKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), "key.pem")
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1_800_000_000, 0)
		jwt, err := clientAssertion(signer, alg, "cid", "https://as.example", now)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(jwt, ".")
		if len(parts) != 3 {
			t.Fatalf("%s: %d parts", alg, len(parts))
		}
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		switch k := key.(type) {
		case *ecdsa.PrivateKey:
			if alg != "ES256" || len(sig) != 64 || !ecdsa.Verify(&k.PublicKey, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
				t.Errorf("ES256 assertion does not verify (alg %s, %d signature bytes)", alg, len(sig))
			}
		case *rsa.PrivateKey:
			if alg != "RS256" || rsa.VerifyPKCS1v15(&k.PublicKey, crypto.SHA256, sum[:], sig) != nil {
				t.Errorf("RS256 assertion does not verify (alg %s)", alg)
			}
		}
		b, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var c struct {
			Iss, Sub, Aud, Jti string
			Iat, Exp           int64
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		if c.Iss != "cid" || c.Sub != "cid" || c.Aud != "https://as.example" || c.Jti == "" || c.Iat != now.Unix() || c.Exp != now.Add(jwtAssertionLifetime).Unix() {
			t.Errorf("%s claims = %+v", alg, c)
		}
	}
}

// TestSigningKeyRefusals: a P-384 key and a file without PEM are refused
// with the reason.
func TestSigningKeyRefusals(t *testing.T) {
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(p384)
	for in, want := range map[string]string{
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})): "P-256",
		"not a key": "no PEM block",
	} {
		if _, _, err := parseSigningKey([]byte(in), "k.pem"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseSigningKey(%.20q) = %v; want %q", in, err, want)
		}
	}
}
