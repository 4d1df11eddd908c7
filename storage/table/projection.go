// Projected schemas: the schema of a read's columns, built once per table schema and column list
// and then shared (an arrow.Schema is immutable). A point get would otherwise build one per call
// (its field slice and its name index) for the row it returns.
package table

import (
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// maxProjections bounds the schemas a table keeps: column lists come from clients, so the set
// is not bounded by the table; past the bound the cache starts over.
const maxProjections = 256

// projections caches projected schemas by table schema and column list.
type projections struct {
	mu sync.Mutex // guards m; held only for the map lookup or insert
	m  map[projectionKey]*arrow.Schema
}

type projectionKey struct {
	schema *arrow.Schema // a manifest's schema: one per decoded manifest, shared by its reads
	names  string        // the column list, each name length-prefixed (names may hold any byte)
}

// of returns the schema of columns names of s (each must be in s).
func (p *projections) of(s *arrow.Schema, names []string) *arrow.Schema {
	var key strings.Builder
	for _, n := range names {
		key.WriteString(strconv.Itoa(len(n)))
		key.WriteByte(':')
		key.WriteString(n)
	}
	k := projectionKey{schema: s, names: key.String()}
	p.mu.Lock()
	out, ok := p.m[k]
	p.mu.Unlock()
	if ok {
		return out
	}
	out = arrow.NewSchema(projectFields(s, names), nil)
	p.mu.Lock()
	if p.m == nil || len(p.m) >= maxProjections {
		p.m = make(map[projectionKey]*arrow.Schema)
	}
	p.m[k] = out
	p.mu.Unlock()
	return out
}
