// The filter shapes that cost a naive evaluator the most, kept with the package so its tests and
// the server's benchmark (R8) measure the same set.
package predicate

import "strings"

// AdversarialLikePatterns are LIKE patterns a backtracking matcher takes exponential time on:
// many wildcards that almost match a value of one repeated character with another at its end.
func AdversarialLikePatterns() []string {
	return []string{
		strings.Repeat("%a", 7) + "%c",
		strings.Repeat("%a", 12) + "%c",
		strings.Repeat("%a", 30) + "%c",
		strings.Repeat("%_", 30) + "%c",
		strings.Repeat("_%", 60) + "c",
		strings.Repeat("%aa_", 40) + "%c%",
		strings.Repeat("a%", 62) + "c",
		"%" + strings.Repeat("a", 500) + "%",
		strings.Repeat("%", 200) + strings.Repeat("_", 64) + "c",
	}
}
