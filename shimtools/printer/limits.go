package printer

// streamThreshold is how much output one file may buffer before it takes
// the output for itself and writes as it goes (parallel workers buffer a
// whole file so that files never interleave).
const streamThreshold = 8 << 20 // bytes

// streamChunk is the write size while a file streams.
const streamChunk = 64 << 10 // bytes
