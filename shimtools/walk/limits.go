package walk

// direntBufSize is the getdents buffer: large enough for most directories
// in one call.
const direntBufSize = 32 << 10 // bytes
