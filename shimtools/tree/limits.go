package tree

// outBufSize is the stdout buffer, flushed when full and once at exit.
const outBufSize = 64 << 10 // bytes

// maxPatternSteps bounds the recursive calls of one -P, -I or .gitignore
// match. tree's matcher backtracks on every '*', so "*a*a*a*a*a*b" against
// a long name takes time exponential in the stars; past the bound the
// name counts as not matching rather than stalling the listing. Real
// patterns take a few hundred steps at most.
const maxPatternSteps = 1 << 16

// maxGitignoreBytes bounds how much of one .gitignore (or info/exclude)
// is read; the rest is ignored. Real ones are a few KiB.
const maxGitignoreBytes = 16 << 20

// gitLineBytes is the longest .gitignore line tree reads at once (fgets
// into a PATH_MAX buffer, its NUL included); a longer line is read as
// several. It is tree's behaviour, not a limit of ours.
const gitLineBytes = 4096 - 1

// pathMax is Linux's PATH_MAX: tree hands the kernel paths as it builds
// them, relative to the working directory, and one this long or longer
// fails with ENAMETOOLONG, so tree leaves the entry out. We check the
// length ourselves since we may resolve paths against another directory.
const pathMax = 4096 // bytes, the terminating NUL included
