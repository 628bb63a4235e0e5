// Package suggest finds the nearest known word to a mistyped one, for
// "did you mean" hints in usage errors. It compares bytes, which is what
// flag and command names are made of; it knows nothing of Unicode.
package suggest

// Nearest returns the candidate with the smallest edit distance to s; the
// first wins a tie. It returns "" when there are no candidates or, with
// maxDist ≥ 0, when none is within maxDist edits.
func Nearest(s string, candidates []string, maxDist int) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := Distance(s, c)
		if (maxDist < 0 || d <= maxDist) && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between a and b: the fewest byte
// insertions, deletions and substitutions that turn one into the other.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
