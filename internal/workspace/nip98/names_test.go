package nip98

import (
	"errors"
	"net/http/httptest"
	"testing"
)

// TestVerifyOtherURLs: a token may name URL or any of OtherURLs, and
// nothing else, whatever the request's Host header says.
func TestVerifyOtherURLs(t *testing.T) {
	want := Expect{URL: "http://127.0.0.1:3000/query", OtherURLs: []string{"http://10.0.0.5:3000/query"}}
	v := Verifier{Now: at(t0)}
	for u, ok := range map[string]bool{
		"http://localhost:3000/query":  true,
		"http://10.0.0.5:3000/query/":  true,
		"http://10.0.0.6:3000/query":   false,
		"http://other.example/query":   false,
		"http://10.0.0.5:3000/events":  false,
		"https://10.0.0.5:3000/query":  false,
		"http://127.0.0.1:3001/query":  false,
		"http://10.0.0.5:3000/query?x": false,
	} {
		h, err := Header(key(t, k3), u, "POST", Options{Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Verify(h, want)
		if ok && err != nil {
			t.Errorf("token for %s: %v; want accepted", u, err)
		}
		if !ok && !errors.Is(err, ErrURL) {
			t.Errorf("token for %s: %v; want ErrURL", u, err)
		}
	}
}

// TestPathURL: the expected URL joins the server's own base with the
// request's path, never its Host.
func TestPathURL(t *testing.T) {
	r := httptest.NewRequest("POST", "http://other.example/query?x=1", nil)
	if got, want := PathURL("http://127.0.0.1:3000", r), "http://127.0.0.1:3000/query?x=1"; got != want {
		t.Errorf("PathURL = %q; want %q", got, want)
	}
	r = httptest.NewRequest("GET", "http://other.example/git/o/r.git/info/refs?service=git-upload-pack", nil)
	if got, want := GitPathURL("https://relay.example", r), "https://relay.example/git/o/r.git"; got != want {
		t.Errorf("GitPathURL = %q; want %q", got, want)
	}
}
