// Sizing a key-index run's Bloom filter for the entries the run ends up holding. A run merge
// only knows an upper bound of its entries when it starts (the entries it adds plus those of the
// runs it merges, of which it drops the stale and the shadowed: a compaction's run about half of
// them), and a Bloom filter cannot be resized by rehashing: its keys are gone once written. It
// can be folded, though. The library sets key k's i-th bit at h_i(k) mod m, so for any d dividing
// m, OR-ing the filter's d slices of m/d bits gives exactly the filter m/d bits would have built
// (h mod m/d = (h mod m) mod m/d). A run's filter is built bloomStartFactor times larger than its
// estimate needs, rounded up to a multiple of a number with many divisors, and finish folds it by
// the largest factor that keeps it at the size its entries need (bloomFitSlack below it at most):
// the sizes a fold can reach (w/2, w/3, w/4, ...) are at most a half apart from there, so the
// filter ends within about a third of what its entries need whatever the estimate was (a
// compaction's run, estimated at twice its entries, within a few percent). The result is an
// ordinary filter of the same format: readers know nothing of the folding.
package table

import (
	"math"

	"github.com/bits-and-blooms/bloom/v3"
)

const (
	// bloomStartFactor: a run's filter is built this many times the size its estimate needs
	// while its entries are added (folded at the end to w/d, d >= 2). Larger would end nearer
	// the size needed but holds more while the run is written (and in the merge budget).
	bloomStartFactor = 2
	// bloomFitSlack: a filter is folded to as little as this share of the bits its entries need
	// at bloomFalsePos (with 7 hash functions, 0.9 of them is a 1.6% false-positive rate).
	bloomFitSlack = 0.9
	// bloomMaxFold bounds the folding factors tried (an estimate 64 times too large is not
	// expected: it is at most the entries added plus those of the runs merged).
	bloomMaxFold = 64 * bloomStartFactor
)

// bloomGrains are the word counts a new filter's size is rounded up to a multiple of (the
// largest not above a sixteenth of its words, so rounding adds at most a sixteenth; a small
// filter's a quarter, at most 6 words): numbers with many small divisors, so that a fold can come
// within a small factor of any smaller size.
var bloomGrains = []int{720, 360, 120, 60, 24, 12, 6, 4, 2, 1}

// newRunBloom is an empty filter for up to estimate entries at bloomFalsePos, to be folded by
// fitBloom once they are added.
func newRunBloom(estimate int) *bloom.BloomFilter {
	m, k := bloom.EstimateParameters(uint(max(estimate, 1)), bloomFalsePos)
	words := bloomStartFactor * ((int(m) + 63) / 64)
	grain, limit := 1, max(words/16, min(words/4, 6))
	for _, g := range bloomGrains {
		if g <= limit {
			grain = g
			break
		}
	}
	words = (words + grain - 1) / grain * grain
	return bloom.New(uint(words*64), k)
}

// fitBloom folds f, filled with n entries, to the fewest bits that still hold them at about
// bloomFalsePos: f itself when no fold is small enough to save anything.
func fitBloom(f *bloom.BloomFilter, n int) *bloom.BloomFilter {
	m, _ := bloom.EstimateParameters(uint(max(n, 1)), bloomFalsePos)
	need := int(math.Ceil(bloomFitSlack * float64(m) / 64)) // words
	words := f.BitSet().Words()
	if len(words)*64 != int(f.Cap()) {
		return f // not word-aligned (never built by newRunBloom): leave it as it is
	}
	fold := 1
	for d := 2; d <= bloomMaxFold && len(words)/d >= need; d++ {
		if len(words)%d == 0 {
			fold = d
		}
	}
	if fold == 1 {
		return f
	}
	size := len(words) / fold
	out := make([]uint64, size)
	for start := 0; start < len(words); start += size {
		for i, w := range words[start : start+size] {
			out[i] |= w
		}
	}
	return bloom.FromWithM(out, uint(size*64), f.K())
}
