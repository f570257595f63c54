package units

import "strings"

// NearestName returns the name in names closest to name by edit distance,
// if it is at most 2 edits away (a typo), else "". A name of 3 characters
// or fewer may be 1 edit away only: 2 edits make "lb" into "tls". Names
// that differ only in their digits (web1, web7) are not typos of each
// other.
func NearestName(name string, names []string) string {
	best, bestD := "", 3
	if len(name) <= 3 {
		bestD = 2
	}
	for _, n := range names {
		if n != name && stripDigits(n) == stripDigits(name) {
			continue // web1 and web7 are two names, not a typo
		}
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// stripDigits is s without its digits.
func stripDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, s)
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment: a swap of two neighbours counts as one edit).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
