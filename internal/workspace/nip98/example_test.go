package nip98_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace/nip98"
)

// A git route on a server: challenge when there is no token, verify the
// token against the repository root URL otherwise, without method check or
// replay cache (git reuses one token for GET and POST).
func Example_gitRoute() {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v nip98.Verifier
		res, err := v.Request(r, nip98.Expect{URL: nip98.GitRepoURL(r, "http")})
		switch {
		case errors.Is(err, nip98.ErrNoToken):
			w.Header().Add("WWW-Authenticate", nip98.Challenge(r.Method))
			w.Header().Add("WWW-Authenticate", nip98.BasicChallenge)
			http.Error(w, "authentication required", http.StatusUnauthorized)
		case err != nil:
			http.Error(w, "NIP-98 auth failed", http.StatusUnauthorized)
		default:
			fmt.Fprintln(w, "hello", res.PubKey.Npub()[:12])
		}
	})

	key, _ := nostrkey.ParseSecret("0000000000000000000000000000000000000000000000000000000000000003")
	r := httptest.NewRequest("GET", "http://relay.example/git/owner/repo.git/info/refs?service=git-upload-pack", nil)
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Header().Values("WWW-Authenticate"))

	h, _ := nip98.Header(key, "http://relay.example/git/owner/repo.git", "GET", nip98.Options{})
	r.Header.Set("Authorization", h)
	w = httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	fmt.Print(w.Code, " ", w.Body.String())
	// Output:
	// 401 [Nostr realm="buzz", method="GET" Basic realm="buzz"]
	// 200 hello npub1lycg5qv
}

// An HTTP API route (the relay's /query and /events): exact URL, method,
// payload hash and replay refusal.
func ExampleVerifier_api() {
	seen := nip98.NewSeenCache(0, 0) // one per server, shared by requests
	v := nip98.Verifier{Seen: seen}
	key, _ := nostrkey.NewSecret()
	body := []byte(`[{"kinds":[9]}]`)
	h, _ := nip98.Header(key, "http://127.0.0.1:3000/query", "POST", nip98.Options{Body: body, Nonce: true})

	want := nip98.Expect{URL: "http://localhost:3000/query", Method: "POST", Body: body, RequirePayload: true}
	_, err := v.Verify(h, want)
	fmt.Println(err)
	_, err = v.Verify(h, want)
	fmt.Println(errors.Is(err, nip98.ErrReplay))
	// Output:
	// <nil>
	// true
}
