package relay

import (
	"io"
	"net/http"
	"testing"
)

func fetchInfo(t testing.TB, base string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(testCtx(t), "GET", base+"/", nil)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if ct := resp.Header.Get("Content-Type"); ct != "application/nostr+json" {
		t.Errorf("NIP-11 content type %q", ct)
	}
	return string(b)
}
