package rg

// outBufSize is the stdout buffer; output is flushed when it fills and once
// at exit.
const outBufSize = 64 << 10 // bytes

// maxThreads caps the default worker count, as ripgrep caps it at 12:
// beyond that, walking and output serialise anyway.
const maxThreads = 12

// mmapMaxPaths is ripgrep's threshold for its memory-map path: with at most
// this many paths, all regular files, each file is searched whole, which
// changes how binary files are reported.
const mmapMaxPaths = 10

// maxGitConfig bounds how much of a git config file is read.
const maxGitConfig = 1 << 20 // bytes

// maxPatternFile bounds a -f pattern file.
const maxPatternFile = 16 << 20 // bytes
