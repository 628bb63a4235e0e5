package glob

// maxSteps bounds backtracking for one Match call; a pattern that needs
// more is reported as not matching rather than letting a hostile ignore
// file stall the walk.
const maxSteps = 1 << 20
