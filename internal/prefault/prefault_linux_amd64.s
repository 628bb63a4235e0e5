#include "textflag.h"

#define SYS_madvise 28

// func madvise(addr, n, advice uintptr) (errno uintptr)
TEXT ·madvise(SB), NOSPLIT, $0-32
	MOVQ	addr+0(FP), DI
	MOVQ	n+8(FP), SI
	MOVQ	advice+16(FP), DX
	MOVQ	$SYS_madvise, AX
	SYSCALL
	MOVQ	AX, errno+24(FP)
	RET

// func image() (text, etext, rodata, epclntab, data, ebss uintptr)
TEXT ·image(SB), NOSPLIT, $0-48
	LEAQ	runtime·text(SB), AX
	MOVQ	AX, text+0(FP)
	LEAQ	runtime·etext(SB), AX
	MOVQ	AX, etext+8(FP)
	LEAQ	runtime·rodata(SB), AX
	MOVQ	AX, rodata+16(FP)
	LEAQ	runtime·epclntab(SB), AX
	MOVQ	AX, epclntab+24(FP)
	LEAQ	runtime·data(SB), AX
	MOVQ	AX, data+32(FP)
	LEAQ	runtime·ebss(SB), AX
	MOVQ	AX, ebss+40(FP)
	RET
