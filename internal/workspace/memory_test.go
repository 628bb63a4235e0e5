package workspace

import (
	"encoding/hex"
	"testing"
)

// TestMemoryDTagVectors pins NIP-AE's published vectors: the d tags of
// three slugs under the conversation key of secret keys 1 and 2.
func TestMemoryDTagVectors(t *testing.T) {
	raw, err := hex.DecodeString("c41c775356fd92eadc63ff5a0dc1da211b268cbea22316767095b2871ea1412d")
	if err != nil {
		t.Fatal(err)
	}
	var k [32]byte
	copy(k[:], raw)
	for slug, want := range map[string]string{
		MemoryCoreSlug:               "bdc233238ffe52e272b44cc233c8f33a2bc510b08be04495b225964283be4a90",
		MemorySlugPrefix + "example": "72d4f9629106451505d7d341ea85bb3ebad4f654fcfd2aad100d5a35f8a85cba",
		"mem/notes/2026-05-12":       "31651571a312780cfdc1f0b706b682ac9f3f51a053e8dca76fe57710bae5a4d4",
	} {
		if got := MemoryDTag(k, slug); got != want {
			t.Errorf("MemoryDTag(K_c, %q) = %s; want %s", slug, got, want)
		}
	}
}
