package jsonrpc

import (
	"context"
	"encoding/json"
	"testing"
)

func TestEncodedResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  Encoded
		want any
	}{
		{"sent as is", Encoded(`{"a":[1,"x\ny"]}`), map[string]any{"a": []any{float64(1), "x\ny"}}},
		{"a newline takes the ordinary path", Encoded("{\"a\":\n1}"), map[string]any{"a": float64(1)}},
	} {
		p, _ := serve(t, Options{}, func(ctx context.Context, req *Request) (any, error) { return tc.res, nil })
		p.send(`{"jsonrpc":"2.0","id":"k1","method":"m"}` + "\n")
		m := p.recv()
		if m["id"] != "k1" || m["jsonrpc"] != "2.0" {
			t.Errorf("%s: reply %v", tc.name, m)
		}
		got, _ := json.Marshal(m["result"])
		want, _ := json.Marshal(tc.want)
		if string(got) != string(want) {
			t.Errorf("%s: result %s; want %s", tc.name, got, want)
		}
	}
}
