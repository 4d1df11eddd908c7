// Projected schemas: the schema of a read's columns, built once per table schema and column list
// and then shared (an arrow.Schema is immutable). A point get would otherwise build one per call
// (its field slice and its name index) for the row it returns.
package fragment

import (
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// maxProjections bounds the schemas a table keeps: column lists come from clients, so the set
// is not bounded by the table; past the bound the cache starts over.
const maxProjections = 256

// Projections caches projected schemas by table schema and column list. The zero value is
// ready; a nil *Projections builds a schema per call.
type Projections struct {
	mu sync.Mutex                                 // guards m and n; held only for the lookup or insert
	m  map[*arrow.Schema]map[string]*arrow.Schema // by table schema (a table shares one per distinct schema), then by column list, then by column list
	n  int                                        // schemas held, across every table schema
}

// projectionKeyBytes: column lists whose key fits are keyed without an allocation.
const projectionKeyBytes = 512

// Of returns the schema of columns names of s (each must be in s).
func (p *Projections) Of(s *arrow.Schema, names []string) *arrow.Schema {
	if p == nil {
		return arrow.NewSchema(projectFields(s, names), nil)
	}
	// The key is the column list with each name length-prefixed (names may hold any byte),
	// built on the stack; the map lookup by string(key) does not copy it.
	var stack [projectionKeyBytes]byte
	key := stack[:0]
	for _, n := range names {
		key = strconv.AppendInt(key, int64(len(n)), 10)
		key = append(key, ':')
		key = append(key, n...)
	}
	p.mu.Lock()
	out, ok := p.m[s][string(key)]
	p.mu.Unlock()
	if ok {
		return out
	}
	out = arrow.NewSchema(projectFields(s, names), nil)
	p.mu.Lock()
	if p.m == nil || p.n >= maxProjections {
		p.m, p.n = make(map[*arrow.Schema]map[string]*arrow.Schema), 0
	}
	bySchema := p.m[s]
	if bySchema == nil {
		bySchema = make(map[string]*arrow.Schema)
		p.m[s] = bySchema
	}
	if _, ok := bySchema[string(key)]; !ok {
		bySchema[string(key)] = out // the inserted key is a copy of the stack bytes
		p.n++
	}
	p.mu.Unlock()
	return out
}

// TableSchemas is how many table schemas key the cache (tests check that versions share one).
func (p *Projections) TableSchemas() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

func projectFields(s *arrow.Schema, names []string) []arrow.Field {
	out := make([]arrow.Field, len(names))
	for i, n := range names {
		out[i] = s.Field(s.FieldIndices(n)[0])
	}
	return out
}
