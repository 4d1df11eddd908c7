// Ranking: vector distances under a store's metric and reciprocal rank fusion of the vector and
// text channels for retrieve (the nearest records themselves come from the store's nearest-row
// read, lsm.Store.Nearest).
package contexts

import (
	"sort"

	"github.com/strata-store/strata/storage/vecindex"
)

// Distance is v's distance from query under metric (MetricL2: squared Euclidean;
// MetricCosine: 1 - cosine similarity, 1 when either vector is zero; MetricDot: 1 - dot
// product), computed as the vector indexes compute it (vecindex.Metric.Distance), so exact and
// indexed rankings agree. The vectors have the same length; an unknown metric is l2.
func Distance(metric string, query, v []float32) float32 {
	return VectorMetric(metric).Distance(query, v)
}

// VectorMetric is the vector index metric of a metric's name (l2 for an unknown one: names are
// validated when a store is created).
func VectorMetric(metric string) vecindex.Metric {
	m, err := vecindex.ParseMetric(metric)
	if err != nil {
		return vecindex.L2
	}
	return m
}

// Scored is a record id with its distance (vector channel) or score (text channel).
type Scored struct {
	ID    string
	Value float32
}

// RRFK is reciprocal rank fusion's constant: a record at rank r (from 1) of a channel scores
// 1/(RRFK + r) from it.
const RRFK = 60

// CandidateDepth is how many records each channel of a retrieve ranks for fusion: enough below
// the limit that a record ranked modestly by both channels can still make the cut.
func CandidateDepth(limit int) int { return min(max(4*limit, 50), 4*MaxLimit) }

// MaxLimit bounds a search's or a retrieve's limit.
const MaxLimit = 1000

// Channel names a retrieve result reports in matched_channels.
const (
	ChannelVector = "vector"
	ChannelText   = "text"
)

// Fused is one retrieve result.
type Fused struct {
	ID             string
	Score          float32
	VectorDistance *float32
	TextScore      *float32
	Channels       []string
}

// Fuse ranks the union of the vector channel's candidates (nearest first) and the text
// channel's (best first) by reciprocal rank fusion, highest first (ties: the smaller id), and
// keeps limit.
func Fuse(vector, text []Scored, limit int) []Fused {
	byID := map[string]*Fused{}
	var order []*Fused
	add := func(list []Scored, channel string) {
		for rank, s := range list {
			f := byID[s.ID]
			if f == nil {
				f = &Fused{ID: s.ID}
				byID[s.ID] = f
				order = append(order, f)
			}
			f.Score += 1 / float32(RRFK+rank+1)
			v := s.Value
			if channel == ChannelVector {
				f.VectorDistance = &v
			} else {
				f.TextScore = &v
			}
			f.Channels = append(f.Channels, channel)
		}
	}
	add(vector, ChannelVector)
	add(text, ChannelText)
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].Score != order[j].Score {
			return order[i].Score > order[j].Score
		}
		return order[i].ID < order[j].ID
	})
	out := make([]Fused, 0, min(limit, len(order)))
	for _, f := range order[:min(limit, len(order))] {
		out = append(out, *f)
	}
	return out
}
