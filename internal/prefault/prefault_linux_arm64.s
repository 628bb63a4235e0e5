#include "textflag.h"

#define SYS_madvise 233

// func madvise(addr, n, advice uintptr) (errno uintptr)
TEXT ·madvise(SB), NOSPLIT, $0-32
	MOVD	addr+0(FP), R0
	MOVD	n+8(FP), R1
	MOVD	advice+16(FP), R2
	MOVD	$SYS_madvise, R8
	SVC
	MOVD	R0, errno+24(FP)
	RET

// func image() (text, etext, rodata, epclntab, data, ebss uintptr)
TEXT ·image(SB), NOSPLIT, $0-48
	MOVD	$runtime·text(SB), R0
	MOVD	R0, text+0(FP)
	MOVD	$runtime·etext(SB), R0
	MOVD	R0, etext+8(FP)
	MOVD	$runtime·rodata(SB), R0
	MOVD	R0, rodata+16(FP)
	MOVD	$runtime·epclntab(SB), R0
	MOVD	R0, epclntab+24(FP)
	MOVD	$runtime·data(SB), R0
	MOVD	R0, data+32(FP)
	MOVD	$runtime·ebss(SB), R0
	MOVD	R0, ebss+40(FP)
	RET
