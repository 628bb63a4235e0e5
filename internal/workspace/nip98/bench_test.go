package nip98

import (
	"testing"
	"time"
)

// BenchmarkHeader is what a client pays per request (sign + encode).
func BenchmarkHeader(b *testing.B) {
	k := key(b, k3)
	body := []byte(`[{"kinds":[9],"#h":["c"],"limit":50}]`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Header(k, "http://127.0.0.1:3000/query", "POST", Options{Body: body, Nonce: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify is what the relay pays per authenticated request: parse,
// id, BIP-340 verification, URL/method/payload checks and a replay claim.
func BenchmarkVerify(b *testing.B) {
	k := key(b, k3)
	body := []byte(`[{"kinds":[9],"#h":["c"],"limit":50}]`)
	const n = 1024
	hdrs := make([]string, n)
	for i := range hdrs {
		hdrs[i], _ = Header(k, "http://127.0.0.1:3000/query", "POST", Options{Body: body, Nonce: true, Now: t0})
	}
	want := Expect{URL: "http://localhost:3000/query", Method: "POST", Body: body}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		v := Verifier{Now: func() time.Time { return t0 }, Seen: NewSeenCache(0, 0)}
		if _, err := v.Verify(hdrs[i%n], want); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
