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
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// jwtAssertionType is the client_assertion_type of private_key_jwt
// (RFC 7523 §2.2).
const jwtAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// signingKey loads the client's private key (PKCS#8 or SEC 1 PEM; EC
// P-256 signs ES256, RSA signs RS256) from its file, a path relative to
// the mcp-oauth directory unless absolute. The file holds a secret, so one
// that others may read is refused.
func (o *oauthClient) signingKey(c *clientCredentials) (crypto.Signer, string, error) {
	path := c.PrivateKeyFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(o.stateDir, filepath.Dir(oauthClientsFile), path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("client private key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, "", fmt.Errorf("%s is readable by others (mode %04o): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("client private key: %w", err)
	}
	return parseSigningKey(b, path)
}

func parseSigningKey(b []byte, name string) (crypto.Signer, string, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, "", fmt.Errorf("%s: no PEM block", name)
	}
	var key any
	var err error
	switch blk.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(blk.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, "", fmt.Errorf("%s: EC keys must be P-256 (ES256)", name)
		}
		return k, "ES256", nil
	case *rsa.PrivateKey:
		return k, "RS256", nil
	}
	return nil, "", fmt.Errorf("%s: %T keys are not supported; use EC P-256 or RSA", name, key)
}

// clientAssertion is a JWT naming the client as issuer and subject, for
// the audience aud (the authorization server's issuer), valid for
// jwtAssertionLifetime, signed with key.
func clientAssertion(key crypto.Signer, alg, clientID, aud string, now time.Time) (string, error) {
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	hdr, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{"iss": clientID, "sub": clientID, "aud": aud,
		"iat": now.Unix(), "exp": now.Add(jwtAssertionLifetime).Unix(), "jti": hex.EncodeToString(jti)})
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(hdr) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			return "", err
		}
		sig = make([]byte, 64) // JWS ES256: r and s, 32 bytes each (RFC 7518 §3.4)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	case *rsa.PrivateKey:
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:]); err != nil {
			return "", err
		}
	default:
		return "", errors.New("unsupported key type")
	}
	return signing + "." + enc.EncodeToString(sig), nil
}
