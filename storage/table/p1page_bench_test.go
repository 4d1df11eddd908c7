package table

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/storage/objstore"
)

// BenchmarkP1ListingPage times what one page of a listing costs the base table: ReadRows of
// 100 (or 1,000) consecutive rows at random places of a merged, indexed 100,000-row fragment of
// rollout-like rows (500 B of text each), every column, on a local store, caches warm.
func BenchmarkP1ListingPage(b *testing.B) {
	ctx := context.Background()
	rec := p13Rows(100_000)
	defer rec.Release()
	for b.Loop() {
		local, err := objstore.NewLocal(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		tbl, err := Create(ctx, local, arrow.NewSchema(rec.Schema().Fields()[:6], nil), "id", Options{Allocator: memory.DefaultAllocator})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tbl.Upsert(ctx, rec, UpsertOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := tbl.BuildKeyIndex(ctx); err != nil {
			b.Fatal(err)
		}
		m, err := tbl.Latest(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var refs []RowRef
		if err := tbl.KeysAfter(ctx, m, "", func(r RowRef) bool { refs = append(refs, r); return true }); err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		for _, n := range []int{100, 1000} {
			page := func(int) error {
				s := rng.IntN(len(refs) - n)
				out, err := tbl.ReadRows(ctx, m, refs[s:s+n], nil)
				if err != nil {
					return err
				}
				out.Release()
				return nil
			}
			if _, err := benchfmt.Time(50, page); err != nil { // warm: footers, page indexes
				b.Fatal(err)
			}
			times, err := benchfmt.Time(300, page)
			if err != nil {
				b.Fatal(err)
			}
			benchfmt.Report(fmt.Sprintf("P1-page-%d-p50", n), benchfmt.Millis(benchfmt.Percentile(times, 50)), "ms",
				fmt.Sprintf("base-table read of one listing page: %d consecutive rows at a random place of a 100,000-row fragment of 500 B text rows, every column, p50", n))
		}
	}
}
