// The P3 benchmark's row content: word-like text that compresses about as well as English prose
// (LZ4 ~2x, zstd ~2.9x over a batch of 100 rows; a technical document here compresses 2.3x and
// 3.2x), so that a WAL that compresses is measured on data like a rollout's, not on a repeated
// character.
package api_test

import (
	"math/rand/v2"
	"strings"
)

const p3TextBytes = 1000

// p3Texts returns n texts of p3TextBytes bytes each: words drawn Zipf-distributed from a fixed
// vocabulary of 5,000 pseudo-words, with commas and full stops, from a fixed seed.
func p3Texts(n int) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	syllables := []string{"ka", "to", "re", "mi", "sa", "lo", "ne", "ti", "ba", "du", "fe", "gi", "ho", "ju",
		"ve", "wy", "xo", "ze", "pri", "stra", "con", "tion", "ing", "er", "al", "ment", "ous", "ly"}
	vocabulary := make([]string, 5000)
	for i := range vocabulary {
		var w strings.Builder
		for range 1 + rng.IntN(3) {
			w.WriteString(syllables[rng.IntN(len(syllables))])
		}
		vocabulary[i] = w.String()
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocabulary)-1))
	out := make([]string, n)
	var b strings.Builder
	for i := range out {
		b.Reset()
		for b.Len() < p3TextBytes {
			b.WriteString(vocabulary[zipf.Uint64()])
			switch rng.IntN(12) {
			case 0:
				b.WriteString(". ")
			case 1:
				b.WriteString(", ")
			default:
				b.WriteByte(' ')
			}
		}
		out[i] = b.String()[:p3TextBytes]
	}
	return out
}
