// The pending set of a search: the newest pending version of every key, from this process's
// memtable and every shard's pending generations. A search consults it for every pending row and
// every base candidate, so the generations' part is built once per set of pending generations
// and shared through the cache (generations are immutable: a seal or a merge changes the set,
// and with it the cache key); only the memtable's part is built per read.
package lsm

import (
	"context"
	"strconv"
	"strings"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/shard"
)

// pendingSet is the newest pending version of every key below before (every key when before is
// empty), tombstones included.
type pendingSet struct {
	gens   *genPending        // shared: never modified
	mem    map[string]version // this read's memtable rows
	before string
}

// genPending is the pending generations of one snapshot and the newest version of every key
// they hold. Versions point into views.
type genPending struct {
	id       string // the generations, "shard/gen " each: the cache key
	views    []genView
	versions map[string]version
	list     []version // versions' values, for iteration
}

// pendingFor builds the pending set of a read of snap that sees mem.
func (s *Store) pendingFor(ctx context.Context, snap *Snapshot, mem *shard.MemView, before string) (*pendingSet, error) {
	var id strings.Builder
	for _, sh := range snap.Shards {
		for _, g := range sh.Generations {
			id.WriteString(sh.Shard)
			id.WriteByte('/')
			id.WriteString(strconv.FormatUint(g.Gen, 10))
			id.WriteByte(' ')
		}
	}
	gp, ok := cache.Get[*genPending](s.pendingCache, "pending_versions", id.String())
	if !ok {
		views, err := s.generationViews(ctx, snap, "", "")
		if err != nil {
			return nil, err
		}
		gp = &genPending{id: id.String(), views: views, versions: map[string]version{}}
		for j := range gp.views {
			g := &gp.views[j]
			for i := g.start; i < len(g.keys.Keys); i++ {
				v := generationVersion(g, i)
				if v.supersedes(gp.versions[v.key]) {
					gp.versions[v.key] = v
				}
			}
		}
		gp.list = make([]version, 0, len(gp.versions))
		for _, v := range gp.versions {
			gp.list = append(gp.list, v)
		}
		cache.Add(s.pendingCache, "pending_versions", id.String(), gp, int64(200*len(gp.versions)+64*len(views)+64))
	}
	p := &pendingSet{gens: gp, mem: map[string]version{}, before: before}
	for i := range mem.Rows {
		v := memtableVersion(&mem.Rows[i])
		if (before == "" || v.key < before) && v.supersedes(p.mem[v.key]) {
			p.mem[v.key] = v
		}
	}
	return p, nil
}

// views are the pending generations the set covers.
func (p *pendingSet) views() []genView { return p.gens.views }

// get is key's newest pending version.
func (p *pendingSet) get(key string) (version, bool) {
	if p.before != "" && key >= p.before {
		return version{}, false
	}
	g, gok := p.gens.versions[key]
	m, mok := p.mem[key]
	switch {
	case mok && (!gok || m.supersedes(g)):
		return m, true
	case gok:
		return g, true
	}
	return version{}, false
}

// each calls fn with the newest pending version of every key, in no order.
func (p *pendingSet) each(fn func(v version)) {
	for _, g := range p.gens.list {
		if p.before != "" && g.key >= p.before {
			continue
		}
		if len(p.mem) > 0 {
			if m, ok := p.mem[g.key]; ok && m.supersedes(g) {
				continue // answered from the memtable below
			}
		}
		fn(g)
	}
	for key, m := range p.mem {
		if g, ok := p.gens.versions[key]; ok && !m.supersedes(g) {
			continue // the generation's is newer: answered above
		}
		fn(m)
	}
}
