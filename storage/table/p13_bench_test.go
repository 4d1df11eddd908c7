package table

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/storage/fragment"
)

// BenchmarkP13FragmentCodecs writes the same 100,000 rollout-like rows (ids, a few repeated
// labels, a timestamp, 500 B of word-like text each) as one fragment with each page codec and
// reads it back: CPU per row to encode and to decode, and bytes per row — the measurement behind
// fragment.Codec.
func BenchmarkP13FragmentCodecs(b *testing.B) {
	const rows = 100_000
	rec := p13Rows(rows)
	defer rec.Release()
	codecs := []struct {
		name  string
		codec compress.Compression
	}{{"snappy", compress.Codecs.Snappy}, {"lz4raw", compress.Codecs.Lz4Raw}, {"zstd", compress.Codecs.Zstd}, {"none", compress.Codecs.Uncompressed}}
	for b.Loop() {
		for _, c := range codecs {
			var data []byte
			encode := benchfmt.BestOf(3, func() {
				var err error
				if data, err = fragment.Encode(rec, memory.DefaultAllocator, c.codec); err != nil {
					b.Fatal(err)
				}
			})
			decode := benchfmt.BestOf(3, func() {
				pf, err := file.NewParquetReader(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: fragment.ScanBatchRows}, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				tbl, err := fr.ReadTable(context.Background())
				if err != nil || tbl.NumRows() != rows {
					b.Fatal(err)
				}
				tbl.Release()
				pf.Close()
			})
			perRow := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 / rows }
			default_ := ""
			if c.codec == fragment.Codec {
				default_ = " (the codec fragments use)"
			}
			benchfmt.Report("P13-encode-"+c.name, perRow(encode), "µs", fmt.Sprintf("CPU per row to write 100,000 rollout-like rows (500 B of text each) as a fragment, %s pages%s", c.name, default_))
			benchfmt.Report("P13-decode-"+c.name, perRow(decode), "µs", "CPU per row to read that fragment back (every column)")
			benchfmt.Report("P13-bytes-"+c.name, float64(len(data))/rows, "B", "fragment bytes per row")
		}
	}
}

// p13Rows builds rollout-like rows: a sorted unique id, a rollout id shared by 100 rows, a role
// out of three, a timestamp, and 500 B of text drawn from a 5,000-word vocabulary.
func p13Rows(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "sequence_order", Type: arrow.PrimitiveTypes.Int32},
		{Name: "role", Type: arrow.BinaryTypes.String},
		{Name: "created_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "content", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: SeqColumn, Type: arrow.PrimitiveTypes.Uint64},
		{Name: TombstoneColumn, Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	rng := rand.New(rand.NewPCG(13, 13))
	words := make([]string, 5000)
	for i := range words {
		var w strings.Builder
		for range 2 + rng.IntN(7) {
			w.WriteByte(byte('a' + rng.IntN(26)))
		}
		words[i] = w.String()
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(words)-1))
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	roles := []string{"system", "user", "assistant"}
	var text strings.Builder
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("r-%09d", i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("rollout-%06d", i/100))
		b.Field(2).(*array.Int32Builder).Append(int32(i % 100))
		b.Field(3).(*array.StringBuilder).Append(roles[i%3])
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1000))
		text.Reset()
		for text.Len() < 500 {
			text.WriteString(words[zipf.Uint64()])
			text.WriteByte(' ')
		}
		b.Field(5).(*array.LargeStringBuilder).Append(text.String()[:500])
		b.Field(6).(*array.Uint64Builder).Append(uint64(i + 1))
		b.Field(7).(*array.BooleanBuilder).Append(false)
	}
	return b.NewRecordBatch()
}
