package search

// fillSize is ripgrep's read buffer (64 KiB). Binary detection looks at one
// fill at a time, so the same size is simulated to decide, byte for byte as
// ripgrep 13 does, how much of a binary file is searched before it stops.
const fillSize = 64 << 10 // bytes

// stdinBufSize is the buffer Rust's standard library puts in front of
// stdin; ripgrep's first read of stdin returns at most this much.
const stdinBufSize = 8 << 10 // bytes

// chunkSize is how much we read at once from a large file; bigger reads
// mean fewer system calls and longer runs for the literal scanner.
const chunkSize = 1 << 20 // bytes

// wholeFileMax is the largest file read in one piece (its size is known
// from stat); larger files are read in chunks of chunkSize.
const wholeFileMax = 16 << 20 // bytes

// keepBufMax is the largest buffer a searcher keeps between files; a bigger
// one (grown for a huge line or file) is dropped so one file does not pin
// memory for the rest of the walk.
const keepBufMax = 16 << 20 // bytes

// MaxLineBytes bounds one line; a longer line ends the search of that file
// with an error naming the limit.
const MaxLineBytes = 1 << 30 // bytes

// maxAltLiterals bounds the literals a multiFinder scans for; each costs a
// pass over the buffer, so beyond this the regex engine alone is cheaper.
const maxAltLiterals = 8

// firstWindow is where the doubling windows of the candidate scans start.
const firstWindow = 256 // bytes

// pairMinFreq is the frequency (byteFreq's unit, hundredths of a percent,
// both cases summed) from which a case-insensitive literal's rarest byte
// is scanned together with a second one, eight positions per word, rather
// than found by memchr: around 1.2% a memchr call per occurrence costs
// more than the pair scan's steady pass over every byte.
const pairMinFreq = 120
