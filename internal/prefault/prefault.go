// Package prefault maps the memory every start-up touches in a handful of
// system calls, instead of one page fault at a time.
//
// One executable links every identity, so even `rg --version` runs the
// package initialisation of the relay, the harness and their dependencies.
// That work touches pages spread over the whole image and a megabyte of
// fresh heap, and each first touch is a page fault. On hosts where a fault
// is expensive (virtual machines with shadow page tables, where one costs
// tens of microseconds) faults, not instructions, dominate start-up.
// madvise(MADV_POPULATE_READ) on the image and MADV_POPULATE_WRITE on the
// writable data and the start of the heap fill the page tables in bulk.
// BENCHMARKS.md has the figures.
//
// Importing the package is the whole interface. It imports nothing, so the
// runtime initialises it before any other package that has init work, and
// main imports it first. Failures are ignored: kernels before Linux 5.14
// lack the populate advice and simply fault as before.
package prefault
