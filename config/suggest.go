package config

import (
	"strings"
	"unicode/utf8"
)

// suggest returns the name in names that key most likely misspells, or ""
// when none is close. Names are compared folded (see foldName) by
// editDistance: the closest name within a third of the key's length (at
// least 1) wins, the earlier in names on a tie. Failing that, the one name
// that starts with a key of three or more characters wins ("redis" for
// redis_url).
func suggest(key string, names []string) string {
	k := foldName(key)
	best, bestDist := "", max(1, utf8.RuneCountInString(k)/3)+1
	for _, n := range names {
		if d := editDistance(k, foldName(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	if best != "" || utf8.RuneCountInString(k) < 3 {
		return best
	}
	for _, n := range names {
		if strings.HasPrefix(foldName(n), k) {
			if best != "" {
				return "" // more than one
			}
			best = n
		}
	}
	return best
}

// foldName puts a key or variable into the form suggest compares: lower
// case, hyphens and spaces as underscores, no underscores at either end.
func foldName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return '_'
		}
		return r
	}, strings.ToLower(s))
	return strings.Trim(s, "_")
}

// editDistance is the optimal string alignment distance of a and b: the
// fewest insertions, deletions, substitutions and swaps of two neighbouring
// characters that turn a into b ("modle" is 1 from "model").
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// d[i][j] is the distance of s[:i] and t[:j].
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}
