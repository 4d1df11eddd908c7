package arrowutil

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/internal/benchfmt"
)

// BenchmarkP13TakeRuns selects 100,000 rollout-like rows (an id, three labels, a timestamp, 500 B
// of text, an all-null column) out of 10 parts in runs of several lengths, copied run by run
// and taken row by row: the time of the first over the second for each run length, the
// measurement behind minGatherRun.
func BenchmarkP13TakeRuns(b *testing.B) {
	const parts, perPart = 10, 10_000
	recs := make([]arrow.RecordBatch, parts)
	for p := range recs {
		recs[p] = takeBenchRows(p, perPart)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	ctx := context.Background()
	for b.Loop() {
		for _, run := range []int{1, 4, 8, 16, 64, 4096} {
			// Runs of run rows, each from the next part in turn, every row of every part once.
			var indices []int64
			for start := 0; start < perPart; start += run {
				for p := range parts {
					for x := start; x < min(start+run, perPart); x++ {
						indices = append(indices, int64(p*perPart+x))
					}
				}
			}
			copied := benchfmt.BestOf(3, func() {
				runs, ok := rowRunsOf(recs, indices)
				if !ok {
					runs = nil // below minGatherRun: measured all the same
					for _, x := range indices {
						p, at := int(x)/perPart, x%perPart
						if n := len(runs); n > 0 && runs[n-1].part == p && runs[n-1].end == at {
							runs[n-1].end++
						} else {
							runs = append(runs, rowRun{part: p, start: at, end: at + 1})
						}
					}
				}
				rec, err := gatherRuns(memory.DefaultAllocator, recs[0].Schema(), recs, runs, len(indices))
				if err != nil {
					b.Fatal(err)
				}
				rec.Release()
			})
			taken := benchfmt.BestOf(3, func() {
				rec, err := takePartsRowByRow(ctx, memory.DefaultAllocator, recs[0].Schema(), recs, indices)
				if err != nil {
					b.Fatal(err)
				}
				rec.Release()
			})
			benchfmt.Report(fmt.Sprintf("P13-take-runs-of-%d", run), float64(copied)/float64(taken), "ratio",
				fmt.Sprintf("time to copy 100,000 rollout-like rows selected in runs of %d rows run by run / to take them row by row (ns per row: %.0f / %.0f)", run,
					float64(copied.Nanoseconds())/float64(len(indices)), float64(taken.Nanoseconds())/float64(len(indices))))
		}
	}
}

// takeBenchRows is n rollout-like rows of part p.
func takeBenchRows(p, n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "role", Type: arrow.BinaryTypes.String},
		{Name: "content_type", Type: arrow.BinaryTypes.String},
		{Name: "created_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "content", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "reward", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "never", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	text := strings.Repeat("word ", 100)
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("id-%02d-%08d", p, i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("r%d", i/100))
		b.Field(2).(*array.StringBuilder).Append("assistant")
		b.Field(3).(*array.StringBuilder).Append("text/plain")
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
		b.Field(5).(*array.LargeStringBuilder).Append(text)
		b.Field(6).(*array.Float32Builder).Append(float32(i))
		b.Field(7).AppendNull()
	}
	return b.NewRecordBatch()
}
