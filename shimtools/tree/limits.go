package tree

// outBufSize is the stdout buffer, flushed when full and once at exit.
const outBufSize = 64 << 10 // bytes
