package cache

import (
	"fmt"
	"testing"
)

// BenchmarkGetHit is a cache hit of a key as long as a fragment's page key, the lookup every
// point read makes for each column's footer, page index and key-index page.
func BenchmarkGetHit(b *testing.B) {
	c := New(1<<30, nil)
	ns := c.Namespace()
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("data/0000000000000000%04d-3f2a9c1b7d5e.parquet#rowgroup/%d/page", i, i)
		Add(ns, "footer", keys[i], &i, 1000)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok := Get[*int](ns, "footer", keys[i%len(keys)]); !ok {
			b.Fatal("miss")
		}
	}
}
