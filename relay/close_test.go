package relay

import (
	"bufio"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBugSlowRequestOutlivesClose: a client that sent a bridge POST's
// headers and never its body held the request's goroutine and connection
// past Close for as long as it liked, since Close returned before the
// server's shutdown grace and nothing cut what the grace left running.
// Close now waits out the grace and then closes every connection.
func TestBugSlowRequestOutlivesClose(t *testing.T) {
	r := startRelay(t, Config{})
	u, err := url.Parse(r.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Expect: 100-continue makes the server say when the handler starts
	// reading the body, so the request is known to be running.
	req := "POST /events HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "100 Continue") {
		t.Fatalf("the relay answered %q, %v; want 100 Continue", status, err)
	}
	if _, err := c.Write([]byte("{")); err != nil { // part of the body, then nothing
		t.Fatal(err)
	}
	r.Close()
	// The connection must be closed by the server now: a read ends with
	// EOF (or a reset), not with the deadline.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		if _, err := br.ReadString('\n'); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the relay kept a running request's connection open after Close")
			}
			return
		}
	}
}
