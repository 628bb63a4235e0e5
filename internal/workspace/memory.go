package workspace

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// NIP-AE memory addressing. An engram (KindEngram) is addressed by a d tag
// that only the agent and its owner can compute or link to a slug:
// d = hex(HMAC-SHA256(K_c, memoryDomain ‖ 0x00 ‖ slug)), K_c being their
// NIP-44 v2 conversation key. Slugs are MemoryCoreSlug or MemorySlugPrefix
// followed by a path.
const (
	// MemoryCoreSlug is the agent's core memory, the one the harness puts
	// in every prompt.
	MemoryCoreSlug = "core"
	// MemorySlugPrefix starts every other memory's slug.
	MemorySlugPrefix = "mem/"
	// memoryDomain separates NIP-AE's HMAC from other uses of K_c.
	memoryDomain = "agent-memory/v1/d-tag"
)

// MemoryDTag returns the d tag of slug under the conversation key of agent
// and owner.
func MemoryDTag(conversationKey [32]byte, slug string) string {
	m := hmac.New(sha256.New, conversationKey[:])
	m.Write([]byte(memoryDomain))
	m.Write([]byte{0})
	m.Write([]byte(slug))
	return hex.EncodeToString(m.Sum(nil))
}
