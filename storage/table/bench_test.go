package table

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/storage/fragment"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// benchTable is a table on the local filesystem with an I/O counter in front of it.
type benchTable struct {
	tbl     *Table
	count   *objstoretest.Counting
	dir     string
	rows    int
	nextSeq uint64
	rng     *rand.Rand
}

const benchPayload = "the quick brown fox jumps over the lazy dog, then again, and again!!" // ~64 bytes

func newBenchTable(b *testing.B, rows int) *benchTable {
	dir := b.TempDir()
	local, err := objstore.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	count := objstoretest.NewCounting(local)
	bt := newBenchTableOn(b, count, count, rows, Options{})
	bt.dir = dir
	return bt
}

// newBenchTableOn fills a table of rows rows on objects, whose I/O count counts, opened with opts.
func newBenchTableOn(b *testing.B, objects objstore.Store, count *objstoretest.Counting, rows int, opts Options) *benchTable {
	tbl, err := Create(context.Background(), objects, testSchema, "id", opts)
	if err != nil {
		b.Fatal(err)
	}
	bt := &benchTable{tbl: tbl, count: count, nextSeq: 1, rng: rand.New(rand.NewPCG(uint64(rows), 1))}
	const chunk = 100_000
	for start := 0; start < rows; start += chunk {
		n := min(chunk, rows-start)
		rs := make([]row, n)
		for i := range rs {
			rs[i] = row{id: benchKey(start + i), value: int64(start + i), payload: benchPayload, seq: bt.seq()}
		}
		bt.upsert(b, rs)
	}
	bt.rows = rows
	return bt
}

func benchKey(i int) string { return fmt.Sprintf("rollout-%09d", i) }

func (bt *benchTable) seq() uint64 { bt.nextSeq++; return bt.nextSeq }

func (bt *benchTable) upsert(b *testing.B, rs []row) {
	rec := batch(memory.DefaultAllocator, rs)
	defer rec.Release()
	if _, err := bt.tbl.Upsert(context.Background(), rec, UpsertOptions{}); err != nil {
		b.Fatal(err)
	}
}

// mixedBatch is 1,000 rows: half replace random existing keys, half are new keys.
func (bt *benchTable) mixedBatch() []row {
	rs := make([]row, 0, 1000)
	seen := map[int]bool{}
	for len(rs) < 500 {
		k := bt.rng.IntN(bt.rows)
		if !seen[k] {
			seen[k] = true
			rs = append(rs, row{id: benchKey(k), value: -1, payload: benchPayload, seq: bt.seq()})
		}
	}
	for range 500 {
		rs = append(rs, row{id: benchKey(bt.rows), value: -2, payload: benchPayload, seq: bt.seq()})
		bt.rows++
	}
	return rs
}

// timedUpserts runs n mixed upserts and returns the median time and mean bytes read.
func (bt *benchTable) timedUpserts(b *testing.B, n int) (time.Duration, float64) {
	var times []time.Duration
	var read int64
	for range n {
		rs := bt.mixedBatch()
		before := bt.count.Stats()
		start := time.Now()
		bt.upsert(b, rs)
		times = append(times, time.Since(start))
		read += bt.count.Stats().Sub(before).ReadBytes
	}
	return benchfmt.Percentile(times, 50), float64(read) / float64(n)
}

// BenchmarkP1Table measures upsert cost against table size (index covering), the no-index
// fallback, point lookups and scan throughput against plain pqarrow, on the local filesystem.
func BenchmarkP1Table(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		small := newBenchTable(b, 20_000)
		if _, err := small.tbl.BuildKeyIndex(ctx); err != nil {
			b.Fatal(err)
		}
		small.timedUpserts(b, 2) // warm the handle's caches, as a long-running worker has them
		smallT, smallRead := small.timedUpserts(b, 9)

		big := newBenchTable(b, 2_000_000)
		// The fallback first, while the table has no index.
		noIndexT, noIndexRead := big.timedUpserts(b, 3)
		if _, err := big.tbl.BuildKeyIndex(ctx); err != nil {
			b.Fatal(err)
		}
		big.timedUpserts(b, 2)
		bigT, bigRead := big.timedUpserts(b, 9)

		benchfmt.Report("P1-upsert-20k", benchfmt.Millis(smallT), "ms", "upsert 1,000 rows (500 replace, 500 new) into a 20k-row table, index covering, median")
		benchfmt.Report("P1-upsert-2m", benchfmt.Millis(bigT), "ms", "upsert 1,000 rows into a 2M-row table, index covering, median")
		benchfmt.Report("P1-upsert-ratio", float64(bigT)/float64(smallT), "x", "upsert time 2M / 20k (goal <= 1.5)")
		benchfmt.Report("P1-upsert-read-20k", smallRead/1024, "KiB", "bytes read per 1,000-row upsert, 20k rows")
		benchfmt.Report("P1-upsert-read-2m", bigRead/1024, "KiB", "bytes read per 1,000-row upsert, 2M rows")
		benchfmt.Report("P1-upsert-read-ratio", bigRead/smallRead, "x", "bytes read 2M / 20k")
		benchfmt.Report("P1-upsert-noindex-2m", benchfmt.Millis(noIndexT), "ms", "upsert 1,000 rows into 2M rows with no key index (key-column scan fallback), median")
		benchfmt.Report("P1-upsert-noindex-read-2m", noIndexRead/(1<<20), "MiB", "bytes read per upsert by the no-index fallback at 2M rows")
		benchfmt.Report("P1-noindex-vs-index", float64(noIndexT)/float64(bigT), "x", "no-index upsert time / indexed upsert time at 2M rows")

		reportPointLookups(b, big)
		reportScan(b, big)
	}
}

func reportPointLookups(b *testing.B, bt *benchTable) {
	ctx := context.Background()
	m, err := bt.tbl.Latest(ctx)
	if err != nil {
		b.Fatal(err)
	}
	times := timeGets(b, bt.tbl, m, bt.rng, 2_000_000, 2000)
	benchfmt.Report("P1-get-p50", benchfmt.Millis(benchfmt.Percentile(times, 50)), "ms", "point lookup of one key (all columns) in the 2M-row table, p50")
	benchfmt.Report("P1-get-p99", benchfmt.Millis(benchfmt.Percentile(times, 99)), "ms", "point lookup of one key in the 2M-row table, p99")
}

func reportScan(b *testing.B, bt *benchTable) {
	ctx := context.Background()
	m, err := bt.tbl.Latest(ctx)
	if err != nil {
		b.Fatal(err)
	}
	best := func(run func() int64) (time.Duration, int64) {
		var bestT time.Duration
		var rows int64
		for range 3 {
			start := time.Now()
			rows = run()
			if d := time.Since(start); bestT == 0 || d < bestT {
				bestT = d
			}
		}
		return bestT, rows
	}
	strataT, strataRows := best(func() int64 {
		var n int64
		if err := bt.tbl.Scan(ctx, m, ScanOptions{}, func(r arrow.RecordBatch) error { n += r.NumRows(); return nil }); err != nil {
			b.Fatal(err)
		}
		return n
	})
	plainT, plainRows := best(func() int64 {
		var n int64
		for _, f := range m.Fragments {
			data, err := os.ReadFile(filepath.Join(bt.dir, filepath.FromSlash(f.Path)))
			if err != nil {
				b.Fatal(err)
			}
			pf, err := file.NewParquetReader(bytes.NewReader(data), file.WithReadProps(parquet.NewReaderProperties(memory.DefaultAllocator)))
			if err != nil {
				b.Fatal(err)
			}
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: fragment.ScanBatchRows}, memory.DefaultAllocator)
			if err != nil {
				b.Fatal(err)
			}
			rr, err := fr.GetRecordReader(ctx, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			for rr.Next() {
				n += rr.RecordBatch().NumRows()
			}
			rr.Release()
			pf.Close()
		}
		return n
	})
	if plainRows < strataRows {
		b.Fatalf("plain read %d rows, strata %d", plainRows, strataRows)
	}
	mb := float64(m.Bytes()) / (1 << 20)
	benchfmt.Report("P1-scan-rows", float64(strataRows)/strataT.Seconds(), "rows/s", "full scan of the 2M-row table, all columns, deletions applied")
	benchfmt.Report("P1-scan-mb", mb/strataT.Seconds(), "MB/s", "full scan throughput in Parquet bytes")
	benchfmt.Report("P1-scan-plain-rows", float64(plainRows)/plainT.Seconds(), "rows/s", "same files read directly with pqarrow")
	benchfmt.Report("P1-scan-vs-pqarrow", (float64(strataRows)/strataT.Seconds())/(float64(plainRows)/plainT.Seconds()), "x", "Strata scan rows/s / plain pqarrow rows/s (goal >= 0.8)")
}

// timeGets times n point gets of random keys among the first rows of benchKey's keys in m, each
// of which must be found.
func timeGets(b *testing.B, tbl *Table, m *Manifest, rng *rand.Rand, rows, n int) []time.Duration {
	ctx := context.Background()
	times, err := benchfmt.Time(n, func(int) error {
		rec, err := tbl.Get(ctx, m, benchKey(rng.IntN(rows)), nil)
		if err != nil {
			return err
		}
		if rec == nil {
			return fmt.Errorf("key not found")
		}
		rec.Release()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return times
}
