// Package routing says which API workers a store's appends should go to: its preferred workers,
// the first FanOut of the live workers ranked by rendezvous (highest random weight) hashing of
// the store against each worker. Every worker and client that knows the same live set computes
// the same answer, and a worker joining or leaving moves only the stores it ranks first, so a
// store's writes stay on few workers — few write shards for every read to consult — while the
// load spreads over all of them.
//
// Routing is advice: a worker that is not preferred still accepts an append (during membership
// changes clients disagree for a heartbeat or two; nothing fails), and correctness never depends
// on it — a store written through every worker is as correct, only more shards to read.
package routing

import (
	"cmp"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// Member is a live API worker.
type Member struct {
	Instance string `json:"instance"`
	URL      string `json:"url"`
}

// Rank returns the first n of members ranked for key (all of them when n <= 0 or larger), best
// first. It does not modify members.
func Rank(key string, members []Member, n int) []Member {
	type scored struct {
		m     Member
		score uint64
	}
	s := make([]scored, len(members))
	for i, m := range members {
		s[i] = scored{m, weight(key, m.Instance)}
	}
	slices.SortFunc(s, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.m.Instance, b.m.Instance))
	})
	if n <= 0 || n > len(s) {
		n = len(s)
	}
	out := make([]Member, n)
	for i := range out {
		out[i] = s[i].m
	}
	return out
}

// weight is the rendezvous weight of a (key, instance) pair: a hash of both, the key first with a
// separator no name holds.
func weight(key, instance string) uint64 {
	d := xxhash.New()
	_, _ = d.WriteString(key)
	_, _ = d.WriteString("\x00")
	_, _ = d.WriteString(instance)
	return d.Sum64()
}

// StoreKey is the routing key of a store.
func StoreKey(kind, name string) string { return kind + "/" + name }
