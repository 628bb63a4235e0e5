package observer

import "time"

// Observer frames (spec §15, NIP-AO).
const (
	observerBufferCap    = 1000              // frames the in-process bus keeps; a publisher further behind loses the oldest (counted)
	observerPublishEvery = time.Second / 6   // ≈6 EVENTs/s: a burst of frames waits in the bus instead of tripping the relay's rate limit
	observerPerWindow    = 90                // EVENTs per observerWindow; beyond it frames are dropped (counted), never queued, so telemetry does not lag
	observerWindow       = time.Minute       // the window observerPerWindow counts over
	observerRawPerWindow = 60                // of observerPerWindow, what raw ACP traffic may use; the rest stays for lifecycle and turn frames
	observerMaxPlaintext = 65535             // one frame's JSON: NIP-44 v2's plaintext limit
	observerEventSlack   = 512               // bytes of a kind 24200 event besides its content (id, pubkey, sig, kind, created_at, three tags)
	observerRawMaxBytes  = 8 << 10           // one raw ACP line kept whole in a frame; a longer line keeps only observerRawHeadBytes
	observerRawHeadBytes = 512               // the head kept of an over-long raw ACP line
	observerLeafKeep     = 4096              // trimming starts by keeping this much of each end of an over-long string; it halves until the frame fits
	observerLeafMin      = 64                // below this, the payload is replaced by a note of its size instead
	observerControlSkew  = 300 * time.Second // a control frame's created_at may be this far from now either way; older ones are replays
	observerFlushWait    = 2 * time.Second   // shutdown waits this long for frames still in the bus to go out
	publishTimeout       = 10 * time.Second  // one frame's write to the relay
)
