package table

import (
	"context"
	"fmt"
	"testing"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// neededBloomBits is what n entries need at bloomFalsePos.
func neededBloomBits(n int) float64 {
	m, _ := bloom.EstimateParameters(uint(max(n, 1)), bloomFalsePos)
	return float64(m)
}

// A run's Bloom filter is as large as the entries it holds need, however far above them the
// estimate it started from was, and it still holds every one of them: the folded filter is the
// one its size would have built, with about the false-positive rate asked for.
func TestARunsBloomFilterIsSizedForTheEntriesItHoldsNotItsEstimate(t *testing.T) {
	for _, n := range []int{1, 70, 3_000, 100_000} {
		for _, over := range []float64{1, 1.3, 1.7, 2, 3, 10} {
			estimate := int(float64(n) * over)
			f := newRunBloom(estimate)
			for i := range n {
				f.AddString(fmt.Sprintf("key-%d", i))
			}
			f = fitBloom(f, n)
			for i := range n {
				require.True(t, f.TestString(fmt.Sprintf("key-%d", i)), "n=%d over=%.1f: key %d lost by the fold", n, over, i)
			}
			bits := float64(f.Cap())
			require.LessOrEqual(t, bits, 1.35*neededBloomBits(n)+384, "n=%d over=%.1f: %v bits", n, over, bits)
			require.GreaterOrEqual(t, bits, bloomFitSlack*neededBloomBits(n), "n=%d over=%.1f", n, over)
			if n >= 3_000 {
				falsePos := 0
				const probes = 50_000
				for i := range probes {
					if f.TestString(fmt.Sprintf("absent-%d", i)) {
						falsePos++
					}
				}
				require.Less(t, float64(falsePos)/probes, 0.02, "n=%d over=%.1f", n, over)
			}
			// The folded filter is an ordinary one: it survives the footer's encoding.
			data, err := f.MarshalBinary()
			require.NoError(t, err)
			back, err := decodeBloom(data)
			require.NoError(t, err)
			require.True(t, back.Equal(f))
		}
	}
}

// A compaction's run is merged with the runs that indexed its sources, so it starts from an
// estimate of twice the entries it keeps: its stored filter is still sized for what it holds,
// and every key is still found through it.
func TestACompactionsRunIsNotIndexedWithAnOversizedBloomFilter(t *testing.T) {
	ctx, mem := context.Background(), checkedAlloc(t)
	tbl, err := Create(ctx, objstoretest.NewMemory(), testSchema, "id", Options{Allocator: mem})
	require.NoError(t, err)
	_, err = tbl.BuildKeyIndex(ctx)
	require.NoError(t, err)
	var seq uint64
	for f := range 6 {
		var rows []row
		for k := f * 3_000; k < (f+1)*3_000; k++ {
			seq++
			rows = append(rows, row{id: fmt.Sprintf("k%06d", k), value: int64(seq), payload: "p", seq: seq})
		}
		rec := batch(mem, rows)
		_, err := tbl.Upsert(ctx, rec, UpsertOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	res, err := tbl.Compact(ctx, CompactionConfig{EverySmallFragment: true, MinFragments: 2})
	require.NoError(t, err)
	require.Positive(t, res.FragmentsRemoved)
	m := res.Manifest
	var entries int64
	for _, r := range m.KeyIndex.Runs {
		f, err := tbl.footer(ctx, r)
		require.NoError(t, err)
		entries += f.entries
		require.LessOrEqual(t, float64(f.bloom.Cap()), 1.2*neededBloomBits(int(f.entries))+384, "run of %d entries", f.entries)
	}
	require.EqualValues(t, 18_000, entries)
	for _, k := range []int{0, 2_999, 9_000, 17_999} {
		got, err := tbl.Get(ctx, m, fmt.Sprintf("k%06d", k), nil)
		require.NoError(t, err)
		require.NotNil(t, got, "k%06d", k)
		require.EqualValues(t, 1, got.NumRows(), "k%06d", k)
		got.Release()
	}
}
