//go:build linux && (amd64 || arm64)

package prefault

import (
	"syscall"
	"testing"
	"unsafe"
)

var (
	target int
	inData = &target // a statically initialised pointer lives in .data
	inBss  *int      // a zero pointer in .bss
)

func TestImageBounds(t *testing.T) {
	text, etext, rodata, epclntab, data, ebss := image()
	if !(text < etext && etext <= rodata && rodata < epclntab && epclntab <= data && data < ebss) {
		t.Fatalf("sections out of order: text %#x-%#x rodata %#x-%#x data %#x-%#x", text, etext, rodata, epclntab, data, ebss)
	}
	fn := **(**uintptr)(unsafe.Pointer(&struct{ f func() }{populateNothing}))
	if fn < text || fn >= etext {
		t.Errorf("a function at %#x is outside text %#x-%#x", fn, text, etext)
	}
	for _, v := range []uintptr{uintptr(unsafe.Pointer(&inData)), uintptr(unsafe.Pointer(&inBss))} {
		if v < data || v >= ebss {
			t.Errorf("a variable at %#x is outside data and bss %#x-%#x", v, data, ebss)
		}
	}
}

func populateNothing() { populate(0, 0, madvPopulateRead) }

// resident reports how many of the pages of b are in memory.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, len(b)/pageSize)
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestPopulateWrite(t *testing.T) {
	const pages = 16
	b, err := syscall.Mmap(-1, 0, pages*pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	if n := resident(t, b); n != 0 {
		t.Fatalf("%d pages resident before populating", n)
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	// An unaligned start still covers its whole page.
	switch r := populate(start+100, start+pages*pageSize, madvPopulateWrite); syscall.Errno(-r) {
	case 0:
	case syscall.EINVAL:
		t.Skip("kernel lacks MADV_POPULATE_WRITE (Linux 5.14+)")
	default:
		t.Fatalf("madvise: %v", syscall.Errno(-r))
	}
	if n := resident(t, b); n != pages {
		t.Fatalf("%d of %d pages resident after populating", n, pages)
	}
}

func TestPopulateEmptyRange(t *testing.T) {
	for _, r := range [][2]uintptr{{0x1000, 0x1000}, {0x2000, 0x1000}} {
		if got := populate(r[0], r[1], madvPopulateWrite); got != 0 {
			t.Errorf("populate(%#x, %#x) = %#x, want no call", r[0], r[1], got)
		}
	}
}
