//go:build linux && (amd64 || arm64)

package prefault

import "unsafe"

// madvise advice values from <linux/mman.h>.
const (
	madvPopulateRead  = 22 // map readable pages, no copy-on-write
	madvPopulateWrite = 23 // map private pages writable, zero or copied
)

// heapAhead is how much heap above the anchor to populate. Package
// initialisation allocates ~200 KB spread over spans, stacks and mark bits
// in the first megabyte or so; 256 KB and 1 MB measured no better, since
// every populated page is zeroed whether used or not (BENCHMARKS.md).
const heapAhead = 512 << 10

// heapChunk is the runtime's heap mapping granule (pallocChunkBytes): the
// region around the first object is mapped at least up to its end.
const heapChunk = 4 << 20

// pageSize is the smallest page Linux uses on amd64 and arm64. On a kernel
// with larger pages an unaligned start fails the call, which costs nothing.
const pageSize = 4 << 10

// Implemented in assembly: the raw system call, and the linker's section
// boundaries, which Go code cannot name.
func madvise(addr, n, advice uintptr) (errno uintptr)
func image() (text, etext, rodata, epclntab, data, ebss uintptr)

// anchor is allocated as package initialisation starts; its address says
// where the heap is growing from.
var anchor *uintptr

func init() {
	text, etext, rodata, epclntab, data, ebss := image()
	populate(text, etext, madvPopulateRead)
	populate(rodata, epclntab, madvPopulateRead)
	populate(data, ebss, madvPopulateWrite)

	anchor = new(uintptr)
	start := uintptr(unsafe.Pointer(anchor))
	end := min(start+heapAhead, (start+heapChunk)&^(heapChunk-1))
	populate(start, end, madvPopulateWrite)
}

// populate applies advice to the whole pages of [start, end) and returns
// the raw result of the system call: 0, or a negated errno.
func populate(start, end, advice uintptr) uintptr {
	start &^= pageSize - 1
	if end <= start {
		return 0
	}
	return madvise(start, end-start, advice)
}
