package main

// R8: what a hostile request can cost a `strata serve` child process.
//
//	R8-like-worst-ms: the slowest answer (best of 3) to a set of adversarial filters over one
//	    stored 64-character value: LIKE patterns with many wildcards, a 2,000-value IN list and a
//	    128-term AND/OR chain (goal <= 50 ms).
//	R8-decode-amplification: peak RSS growth / body bytes of the worst body of each kind — a JSON
//	    append, a compressed Arrow append decoding to just under its limit, a compressed Arrow bomb,
//	    datagen JSON events, and 2 million empty datagen events — each in a fresh process after
//	    one small append of each kind (goal <= 4).

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/strata-store/strata/internal/benchfmt"
	"github.com/strata-store/strata/storage/predicate"
)

func BenchmarkR8Robustness(b *testing.B) {
	for b.Loop() {
		if benchfmt.Wanted("R8-like") {
			r8Filters(b)
		}
		if benchfmt.Wanted("R8-decode") {
			r8Decode(b)
		}
	}
}

// r8Filters times the adversarial filters against one stored 64-character value.
func r8Filters(b *testing.B) {
	s := startChildServer(b)
	s.createRollouts(b, "r8")
	value := strings.Repeat("a", 63) + "b"
	if code := s.post(b, "/api/v1/rollouts/r8/records?flush=true", "application/json",
		[]byte(`{"records": [{"id": "x", "rollout_id": "`+value+`"}]}`)); code != http.StatusCreated {
		b.Fatalf("append: %d", code)
	}
	var filters []string
	for _, p := range predicate.AdversarialLikePatterns() {
		filters = append(filters, "rollout_id LIKE '"+p+"'", "rollout_id NOT LIKE '"+p+"'")
	}
	in := make([]string, 2000) // as many as a URL under the server's 64 KiB header limit holds
	for i := range in {
		in[i] = fmt.Sprintf("'a%d'", i)
	}
	filters = append(filters, "rollout_id IN ("+strings.Join(in, ", ")+")")
	var chain []string
	for i := range predicate.MaxTerms {
		op := " AND "
		if i%2 == 1 {
			op = " OR "
		}
		chain = append(chain, fmt.Sprintf("rollout_id LIKE '%%a%%a%%a%%a%%%d'%s", i, op))
	}
	filters = append(filters, strings.TrimSuffix(strings.TrimSuffix(strings.Join(chain, ""), " AND "), " OR "))
	worst, worstFilter := time.Duration(0), ""
	for _, f := range filters {
		u := s.base + "/api/v1/rollouts/r8/records?filters=" + url.QueryEscape(f)
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			resp, err := http.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("filter %.60q...: %d", f, resp.StatusCode)
			}
			best = min(best, time.Since(start))
		}
		if best > worst {
			worst, worstFilter = best, f
		}
	}
	benchfmt.Report("R8-like-worst-ms", float64(worst.Microseconds())/1000, "ms",
		fmt.Sprintf("slowest of %d adversarial filters (LIKE wildcards, %d-value IN, %d-term AND/OR) over a 64-character value, over HTTP (goal <= 50; worst: %.40s...)",
			len(filters), len(in), predicate.MaxTerms, worstFilter))
}

// r8Decode measures each body kind in a fresh process.
func r8Decode(b *testing.B) {
	const arrowCT = "application/vnd.apache.arrow.stream"
	type body struct {
		name, path, contentType string
		data                    []byte
	}
	eventJSON := `{"event_id":"e%d","item_id":"i%d","root_item_id":"i%d","item_seq":%d,"checkpoint_id":"c","run_id":"r","writer_epoch":"w","event_type":"STEP_STARTED","step_name":"s","step_kind":"leaf","step_index":0,"schema_version":2}`
	var events strings.Builder
	events.WriteString(`{"events":[`)
	for i := range 80_000 {
		if i > 0 {
			events.WriteByte(',')
		}
		fmt.Fprintf(&events, eventJSON, i, i%100, i%100, i/100)
	}
	events.WriteString(`]}`)
	var records strings.Builder
	records.WriteString(`{"records":[`)
	for i := range 4096 {
		if i > 0 {
			records.WriteByte(',')
		}
		fmt.Fprintf(&records, `{"id":"r%d","rollout_id":"t","content":"%s"}`, i, strings.Repeat("x", 4000))
	}
	records.WriteString(`]}`)
	warmRecords := `{"records":[{"id":"warm","rollout_id":"t","content":"` + strings.Repeat("w", 2<<20) + `"}]}`
	var warm strings.Builder
	warm.WriteString(`{"events":[`)
	for i := range 100 {
		if i > 0 {
			warm.WriteByte(',')
		}
		fmt.Fprintf(&warm, eventJSON, 1_000_000+i, 1000+i, 1000+i, 0)
	}
	warm.WriteString(`]}`)
	warmEvents := warm.String()
	bodies := []body{
		{"json", "/api/v1/rollouts/r8/records", "application/json", []byte(records.String())},
		{"arrow-compressed", "/api/v1/rollouts/r8/records", arrowCT, r8CompressibleArrow(b)},
		{"arrow-bomb", "/api/v1/rollouts/r8/records", arrowCT, r8ArrowBomb(b)},
		{"datagen-json", "/api/v1/datagen/r8d/events", "application/json", []byte(events.String())},
		{"datagen-empty-events", "/api/v1/datagen/r8d/events", "application/json", []byte(`{"events":[` + strings.Repeat("{},", 2_000_000) + `{}]}`)},
	}
	worst := 0.0
	for _, bd := range bodies {
		s := startChildServer(b, "STRATA_MEMTABLE_MEMORY_BYTES=-1")
		s.createRollouts(b, "r8")
		if code := s.post(b, "/api/v1/datagen", "application/json", []byte(`{"name":"r8d"}`)); code != http.StatusCreated {
			b.Fatalf("datagen store: %d", code)
		}
		// One small append of each kind first: what a process sets up once (the WAL's direct-write
		// buffers, each store's shard) is not what a body costs.
		if code := s.post(b, "/api/v1/rollouts/r8/records", "application/json", []byte(warmRecords)); code != http.StatusCreated {
			b.Fatalf("warm-up append: %d", code)
		}
		if code := s.post(b, "/api/v1/datagen/r8d/events", "application/json", []byte(warmEvents)); code != http.StatusCreated {
			b.Fatalf("warm-up datagen append: %d", code)
		}
		before := s.settle()
		var code int
		peak := s.peakDuring(func() { code = s.post(b, bd.path, bd.contentType, bd.data) })
		s.saveHeapProfile("r8-" + bd.name + ".heap") // where the body's bytes went (alloc_space)
		ratio := float64(peak-before) / float64(len(bd.data))
		worst = max(worst, ratio)
		benchfmt.Report("R8-decode-amplification-"+bd.name, ratio, "x",
			fmt.Sprintf("peak RSS growth / body bytes, one %.1f MB %s body (answered %d)", float64(len(bd.data))/1e6, bd.name, code))
	}
	benchfmt.Report("R8-decode-amplification", worst, "x", "the largest of the body kinds above (goal <= 4)")
}

// r8CompressibleArrow is a ZSTD-compressed Arrow body that decodes to 32 MiB, just under the 2x
// its size the server allows: text that is part random, part repetition.
func r8CompressibleArrow(b *testing.B) []byte {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "content", Type: arrow.BinaryTypes.String}}, nil)
	var best []byte
	for _, randomShare := range []float64{0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8} {
		ids, runs, content := array.NewStringBuilder(memory.DefaultAllocator), array.NewStringBuilder(memory.DefaultAllocator), array.NewStringBuilder(memory.DefaultAllocator)
		decoded := 0
		for i := 0; decoded < 32<<20; i++ {
			raw := make([]byte, int(4096*randomShare*3/4))
			_, _ = rand.Read(raw)
			text := base64.StdEncoding.EncodeToString(raw)
			text += strings.Repeat("a", 4096-len(text))
			ids.Append(fmt.Sprintf("c%d", i))
			runs.Append("t")
			content.Append(text)
			decoded += len(text)
		}
		cols := []arrow.Array{ids.NewArray(), runs.NewArray(), content.NewArray()}
		rec := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithZstd())
		_ = w.Write(rec)
		_ = w.Close()
		rec.Release()
		for _, c := range cols {
			c.Release()
		}
		ids.Release()
		runs.Release()
		content.Release()
		if float64(decoded)/float64(buf.Len()) < 1.9 {
			best = buf.Bytes() // the most compressed body the server accepts
			break
		}
	}
	if best == nil {
		b.Fatal("no compressible body under the decode limit")
	}
	return best
}

// r8ArrowBomb is an 8 MB ZSTD-compressed Arrow body that declares 256 MiB of text beside its
// incompressible part (so the ratio is measured over a body large enough to rise above noise).
func r8ArrowBomb(b *testing.B) []byte {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "content", Type: arrow.BinaryTypes.String}}, nil)
	ids, runs, content := array.NewStringBuilder(memory.DefaultAllocator), array.NewStringBuilder(memory.DefaultAllocator), array.NewStringBuilder(memory.DefaultAllocator)
	defer ids.Release()
	defer runs.Release()
	defer content.Release()
	for i := range 256 {
		ids.Append(fmt.Sprintf("b%d", i))
		runs.Append(strings.Repeat("a", 1<<20))
		raw := make([]byte, 32<<10)
		_, _ = rand.Read(raw)
		content.Append(base64.StdEncoding.EncodeToString(raw))
	}
	cols := []arrow.Array{ids.NewArray(), runs.NewArray(), content.NewArray()}
	rec := array.NewRecordBatch(schema, cols, 256)
	defer rec.Release()
	for _, c := range cols {
		defer c.Release()
	}
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithZstd())
	if err := w.Write(rec); err != nil {
		b.Fatal(err)
	}
	_ = w.Close()
	return buf.Bytes()
}
