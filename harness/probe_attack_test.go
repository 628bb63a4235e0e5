package harness

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestAttackRelayDocumentFails: a relay (or a proxy before it) whose
// NIP-11 document cannot be read, while its websocket works, must not
// make the built buzz-acp fail or hang its requests: the first probe
// fails, the harness settles on the websocket for good and answers every
// mention through it, without probing again. Before, production called
// the probe and dropped its error, so every later request probed again
// (waiting out the retry ladder each time) while the tests, which turned
// the bridge off themselves, never saw it.
func TestAttackRelayDocumentFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built buzz-acp and buzz-agent")
	}
	w := newWorld(t)
	var probes atomic.Int32
	proxyURL := w.plainProxy(t, func(rw http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodGet || !strings.Contains(req.Header.Get("Accept"), "application/nostr+json") {
			return false
		}
		// The connection drops: the document cannot be read at all (a
		// relay without one, which answers 404, is another case).
		probes.Add(1)
		if conn, _, err := http.NewResponseController(rw).Hijack(); err == nil {
			conn.Close()
		}
		return true
	})

	r := newRestartRig(t, w)
	r.url = proxyURL
	r.args = []string{"--multiple-event-handling", "queue"}
	r.start()
	first := w.mention("are you there?")
	w.awaitAgentReply(t, "the answer over the websocket", 60*time.Second, first.ID, nil)
	if probes.Load() == 0 {
		t.Fatal("buzz-acp never asked for the NIP-11 document; the test did not test the failure")
	}
	before := probes.Load()
	second := w.mention("and now?")
	w.awaitAgentReply(t, "the second answer", 30*time.Second, second.ID, nil)
	if n := probes.Load() - before; n != 0 {
		t.Errorf("buzz-acp asked for the NIP-11 document %d more times during a later turn; want the websocket settled for good after the first failure", n)
	}
}
