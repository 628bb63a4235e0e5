package nip98

import (
	"sync"
	"time"
)

// SeenCache remembers claimed event ids for a while so a token cannot be
// replayed. It holds at most a fixed number of ids; past that the oldest is
// dropped, which only matters under a flood (see DefaultSeenMax). It is safe
// for concurrent use and starts no goroutines: expiry happens on Claim.
type SeenCache struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	at    map[string]time.Time // id → when claimed
	queue []seenEntry          // claims in order, oldest at head
	head  int
}

type seenEntry struct {
	id string
	at time.Time
}

// NewSeenCache returns a cache that remembers each id for ttl and at most
// max ids. Zero or negative values take DefaultSeenTTL and DefaultSeenMax.
func NewSeenCache(max int, ttl time.Duration) *SeenCache {
	if max <= 0 {
		max = DefaultSeenMax
	}
	if ttl <= 0 {
		ttl = DefaultSeenTTL
	}
	return &SeenCache{ttl: ttl, max: max, at: make(map[string]time.Time)}
}

// Claim records id as used at now. It returns false if id was already
// claimed within the cache's ttl: a replay.
func (c *SeenCache) Claim(id string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire(now)
	if _, ok := c.at[id]; ok {
		return false
	}
	for len(c.at) >= c.max && c.head < len(c.queue) {
		c.dropHead()
	}
	c.at[id] = now
	c.queue = append(c.queue, seenEntry{id, now})
	return true
}

// Len returns how many ids are remembered.
func (c *SeenCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.at)
}

func (c *SeenCache) expire(now time.Time) {
	for c.head < len(c.queue) && !now.Before(c.queue[c.head].at.Add(c.ttl)) {
		c.dropHead()
	}
}

// dropHead forgets the oldest claim and compacts the queue when half of it
// is spent.
func (c *SeenCache) dropHead() {
	if c.head >= len(c.queue) {
		return
	}
	e := c.queue[c.head]
	c.queue[c.head] = seenEntry{}
	c.head++
	if t, ok := c.at[e.id]; ok && t.Equal(e.at) {
		delete(c.at, e.id)
	}
	if c.head > len(c.queue)/2 {
		c.queue = append(c.queue[:0], c.queue[c.head:]...)
		c.head = 0
	}
}
