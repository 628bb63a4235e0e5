package ignore

// maxIgnoreLine bounds one line of an ignore file; longer lines end the
// parse of that file (git itself has no use for such patterns).
const maxIgnoreLine = 64 << 10 // bytes

// maxIgnoreFile bounds how much of one ignore file is read.
const MaxIgnoreFile = 16 << 20 // bytes
