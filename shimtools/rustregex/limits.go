package rustregex

// maxRepeat is the largest repetition count Go's RE2 parser accepts;
// larger counts are written as nested repetitions.
const maxRepeat = 1000

// maxUnroll bounds the copies count.unroll writes.
const maxUnroll = 1000

// optionalRun is the length of each run of optional copies a counted
// range is written as (see count.apply).
const optionalRun = 100

// maxCount bounds the counts translated that way: a run of 100 blocks
// of 1000 already takes Go's compiler a fifth of a second.
const maxCount = 100_000
