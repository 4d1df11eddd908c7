package vecindex

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// clustered makes n vectors the way embeddings are: cluster centres plus a low-dimensional
// spread, plus a little noise.
func clustered(rng *rand.Rand, n, dim int) (gen func() []float32, vs Vectors) {
	const clusters, latent = 50, 16
	cent := make([][]float32, clusters)
	for i := range cent {
		cent[i] = make([]float32, dim)
		for j := range cent[i] {
			cent[i][j] = float32(rng.NormFloat64()) * 2
		}
	}
	a := make([]float32, dim*latent)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	gen = func() []float32 {
		c := cent[rng.IntN(clusters)]
		z := make([]float32, latent)
		for l := range z {
			z[l] = float32(rng.NormFloat64())
		}
		v := make([]float32, dim)
		for j := range v {
			s := c[j] + float32(rng.NormFloat64())*0.05
			for l, zl := range z {
				s += a[j*latent+l] * zl * 0.5
			}
			v[j] = s
		}
		return v
	}
	vs = Vectors{Dim: dim}
	for i := 0; i < n; i++ {
		vs.Rows = append(vs.Rows, uint32(3*i+1)) // positions need not be dense
		vs.Values = append(vs.Values, gen()...)
	}
	return gen, vs
}

// exactDistance is the metric's distance computed plainly (float64).
func exactDistance(m Metric, q, v []float32) float64 {
	var dot, nq, nv, l2 float64
	for i := range q {
		dot += float64(q[i]) * float64(v[i])
		nq += float64(q[i]) * float64(q[i])
		nv += float64(v[i]) * float64(v[i])
		d := float64(q[i]) - float64(v[i])
		l2 += d * d
	}
	switch m {
	case Cosine:
		return 1 - dot/(sqrt(nq)*sqrt(nv))
	case Dot:
		return 1 - dot
	}
	return l2
}

func sqrt(x float64) float64 {
	z := x
	for i := 0; i < 50 && z > 0; i++ {
		z = (z + x/z) / 2
	}
	return z
}

func bruteForce(m Metric, vs Vectors, q []float32, k int) []uint32 {
	type rd struct {
		row uint32
		d   float64
	}
	all := make([]rd, len(vs.Rows))
	for i, r := range vs.Rows {
		all[i] = rd{r, exactDistance(m, q, vs.Values[i*vs.Dim:(i+1)*vs.Dim])}
	}
	slices.SortFunc(all, func(a, b rd) int {
		if a.d < b.d {
			return -1
		}
		if a.d > b.d {
			return 1
		}
		return int(a.row) - int(b.row)
	})
	out := make([]uint32, 0, k)
	for _, x := range all[:min(k, len(all))] {
		out = append(out, x.row)
	}
	return out
}

// Recall@10 against brute force is at least 0.95 with the default nprobe, for every metric, and
// the distances answered are the metric's.
func TestRecallAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 20000
	if raceEnabled {
		n = 5000
	}
	gen, vs := clustered(rng, n, 96)
	for _, m := range []Metric{L2, Cosine, Dot} {
		data, err := Build(context.Background(), vs, m, BuildOptions{})
		require.NoError(t, err)
		ix, err := Decode(data)
		require.NoError(t, err)
		require.Equal(t, int(2*math.Sqrt(float64(n))), ix.Lists())
		hits, total := 0, 0
		for q := 0; q < 50; q++ {
			qv := gen()
			truth := bruteForce(m, vs, qv, 10)
			got, err := ix.Search(qv, SearchOptions{K: 10})
			require.NoError(t, err)
			require.Len(t, got, 10)
			for i, h := range got {
				if i > 0 {
					require.LessOrEqual(t, got[i-1].Distance, h.Distance)
				}
				if slices.Contains(truth, h.Row) {
					hits++
				}
				at := slices.Index(vs.Rows, h.Row)
				require.InDelta(t, exactDistance(m, qv, vs.Values[at*vs.Dim:(at+1)*vs.Dim]), float64(h.Distance), 1e-3*max(1, float64(h.Distance)))
				require.Equal(t, vs.Values[at*vs.Dim:(at+1)*vs.Dim], h.Vector, "the vector as written")
			}
			total += len(truth)
		}
		recall := float64(hits) / float64(total)
		t.Logf("%s: recall@10 %.3f", m, recall)
		require.GreaterOrEqual(t, recall, 0.95, m.String())
		// Scanning every list is exact.
		qv := gen()
		got, err := ix.Search(qv, SearchOptions{K: 10, NProbe: ix.Lists()})
		require.NoError(t, err)
		rows := make([]uint32, len(got))
		for i, h := range got {
			rows[i] = h.Row
		}
		require.Equal(t, bruteForce(m, vs, qv, 10), rows, m.String())
	}
}

func TestSmallIndexesSkipAndErrors(t *testing.T) {
	ctx := context.Background()
	empty, err := Build(ctx, Vectors{Dim: 4}, L2, BuildOptions{})
	require.NoError(t, err)
	ix, err := Decode(empty)
	require.NoError(t, err)
	hits, err := ix.Search([]float32{1, 2, 3, 4}, SearchOptions{K: 3})
	require.NoError(t, err)
	require.Empty(t, hits)

	vs := Vectors{Dim: 2, Rows: []uint32{7, 8, 9}, Values: []float32{0, 0, 1, 0, 0, 5}}
	data, err := Build(ctx, vs, L2, BuildOptions{})
	require.NoError(t, err)
	ix, err = Decode(data)
	require.NoError(t, err)
	require.Equal(t, 3, ix.Len())
	hits, err = ix.Search([]float32{0.9, 0}, SearchOptions{K: 10})
	require.NoError(t, err)
	require.Equal(t, []Hit{{Row: 8, Distance: 0.01}, {Row: 7, Distance: 0.81}, {Row: 9, Distance: 25.81}}, roundHits(hits))
	require.Equal(t, []float32{1, 0}, hits[0].Vector, "a hit carries its vector as written")
	hits, err = ix.Search([]float32{0.9, 0}, SearchOptions{K: 1, Skip: func(r uint32) bool { return r == 8 }})
	require.NoError(t, err)
	require.Equal(t, []Hit{{Row: 7, Distance: 0.81}}, roundHits(hits), "a skipped row takes no place")
	_, err = ix.Search([]float32{1}, SearchOptions{K: 1})
	require.Error(t, err)

	_, err = Build(ctx, Vectors{Dim: 2, Rows: []uint32{1}, Values: []float32{1}}, L2, BuildOptions{})
	require.Error(t, err)
	_, err = Build(ctx, vs, Metric(9), BuildOptions{})
	require.Error(t, err)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Build(cancelled, vs, L2, BuildOptions{})
	require.ErrorIs(t, err, context.Canceled)

	for _, name := range []string{"l2", "cosine", "dot"} {
		m, err := ParseMetric(name)
		require.NoError(t, err)
		require.Equal(t, name, m.String())
	}
	_, err = ParseMetric("hamming")
	require.Error(t, err)
	require.Equal(t, 8, DefaultNProbe(20))
	require.Equal(t, 90, DefaultNProbe(894))
	require.Equal(t, 3, DefaultNProbe(3))
}

func roundHits(hs []Hit) []Hit {
	out := make([]Hit, len(hs))
	for i, h := range hs {
		out[i] = Hit{Row: h.Row, Distance: float32(int(h.Distance*100+0.5)) / 100}
	}
	return out
}

// A truncated, altered or foreign object is ErrCorrupt, and a header claiming huge sizes is
// refused before anything is allocated for them.
func TestCorruptObjectsAreRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	_, vs := clustered(rng, 500, 8)
	data, err := Build(context.Background(), vs, Cosine, BuildOptions{})
	require.NoError(t, err)
	_, err = Decode(data)
	require.NoError(t, err)
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"truncated": data[:len(data)-1],
		"longer":    append(slices.Clone(data), 0),
		"magic":     append([]byte("XXXX"), data[4:]...),
		"bit flip":  flip(data, len(data)/2),
		"crc":       flip(data, len(data)-1),
		"version":   with32(data, 4, 1),
		"huge dim":  with32(data, 8, 1<<30),
		"metric":    with32(data, 12, 7),
		"huge rows": with64(data, 20, 1<<40),
	} {
		_, err := Decode(bad)
		require.ErrorIs(t, err, ErrCorrupt, name)
	}
}

// An index read a list at a time — its head, then only the lists a search probes, each
// checked on its own — answers exactly what the whole decoded index answers, and a damaged list
// is ErrCorrupt when (and only when) a search needs it.
func TestAnIndexReadAListAtATimeAnswersAsTheWholeOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	gen, vs := clustered(rng, 3000, 16)
	for _, m := range []Metric{L2, Cosine, Dot} {
		data, err := Build(context.Background(), vs, m, BuildOptions{})
		require.NoError(t, err)
		whole, err := Decode(data)
		require.NoError(t, err)
		n, err := HeadBytes(data[:HeaderBytes])
		require.NoError(t, err)
		head, err := DecodeHead(data[:n])
		require.NoError(t, err)
		require.Equal(t, int64(len(data)), head.ObjectBytes())
		read := map[int]int{}
		load := func(lists []int) ([]*List, error) {
			out := make([]*List, len(lists))
			for i, l := range lists {
				read[l]++
				at, n := head.ListRange(l)
				var err error
				if out[i], err = head.DecodeList(l, data[at:at+n]); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
		for range 20 {
			q := gen()
			want, err := whole.Search(q, SearchOptions{K: 10})
			require.NoError(t, err)
			got, err := head.Search(q, SearchOptions{K: 10}, load)
			require.NoError(t, err)
			require.Equal(t, want, got, m.String())
		}
		require.Less(t, len(read), head.Lists(), "only the probed lists were read")

		// A flipped byte in list 0 fails the search that probes it.
		at, ln := head.ListRange(0)
		bad := flip(data, int(at+ln/2))
		_, err = head.DecodeList(0, bad[at:at+ln])
		require.ErrorIs(t, err, ErrCorrupt)
		_, err = Decode(bad)
		require.ErrorIs(t, err, ErrCorrupt)
		_, err = head.DecodeList(0, bad[at:at+ln-1])
		require.ErrorIs(t, err, ErrCorrupt, "a list of the wrong length")
	}
}

func flip(b []byte, at int) []byte {
	out := slices.Clone(b)
	out[at] ^= 0x10
	return out
}

func with32(b []byte, at int, v uint32) []byte {
	out := slices.Clone(b)
	binary.LittleEndian.PutUint32(out[at:], v)
	return out
}

func with64(b []byte, at int, v uint64) []byte {
	out := slices.Clone(b)
	binary.LittleEndian.PutUint64(out[at:], v)
	return out
}

func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	_, vs := clustered(rng, 40, 4)
	data, err := Build(context.Background(), vs, L2, BuildOptions{})
	require.NoError(f, err)
	f.Add(data)
	f.Add([]byte("SVIX"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("not ErrCorrupt: %v", err)
			}
			return
		}
		_, _ = ix.Search(make([]float32, ix.Dim()), SearchOptions{K: 3})
	})
}
