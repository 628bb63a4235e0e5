//go:build linux && (amd64 || arm64)

package prefault

import "unsafe"

// madvise advice values from <linux/mman.h>.
const (
	madvPopulateRead  = 22 // map readable pages, no copy-on-write
	madvPopulateWrite = 23 // map private pages writable, zero or copied
)

// heapAhead is how much heap above the first object to populate. Package
// initialisation allocates ~200 KB spread over spans, stacks and mark bits
// in the first megabyte or so; populating more than about half a megabyte
// costs more in zeroing than the faults it saves (BENCHMARKS.md).
const heapAhead = 512 << 10

// heapChunk is the runtime's heap mapping granule (pallocChunkBytes): the
// region around the first object is mapped at least up to its end.
const heapChunk = 4 << 20

const pageSize = 4 << 10

// Implemented in assembly: the raw system call, and the linker's section
// boundaries, which Go code cannot name.
func madvise(addr, n, advice uintptr) (errno uintptr)
func image() (text, etext, rodata, epclntab, data, ebss uintptr)

// anchor is the first heap object of the process, or close to it; its
// address says where the heap is.
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
