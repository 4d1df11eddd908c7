package textindex

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/stretchr/testify/require"
)

func TestTermsFollowUnicodeWordBoundariesAndLowercase(t *testing.T) {
	require.Equal(t, []string{"héllo", "wörld", "42", "don't", "3.14"}, Terms("Héllo, WÖRLD! 42 don't 3.14"))
	require.Empty(t, Terms(" ,, "))
	require.Empty(t, Terms(strings.Repeat("x", MaxTermBytes+1)), "an over-long token is not a term")
}

func TestParseQueryBoundsItsInput(t *testing.T) {
	q, err := ParseQuery("Payments RUNBOOK payments")
	require.NoError(t, err)
	require.Equal(t, []string{"payments", "runbook"}, q.Terms)
	_, err = ParseQuery(" ,, ")
	require.Error(t, err)
	_, err = ParseQuery(strings.Repeat("a ", MaxQueryBytes))
	require.Error(t, err)
	var many []string
	for i := range MaxQueryTerms + 1 {
		many = append(many, strings.Repeat("w", 1+i%5)+string(rune('a'+i%26))+strings.Repeat("z", i/26))
	}
	_, err = ParseQuery(strings.Join(many, " "))
	require.Error(t, err)
}

// A randomized model: an index's statistics and top documents, with rows deleted, equal what
// scanning the same documents with Query.Match answers, before and after an encode/decode round
// trip.
func TestIndexSearchMatchesAScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	words := []string{"alpha", "beta", "Gamma", "delta", "payments", "runbook", "déploy", "事件"}
	for round := range 20 {
		b := NewBuilder()
		texts := map[uint32]string{}
		row := uint32(0)
		for range 1 + rng.IntN(300) {
			row += 1 + uint32(rng.IntN(3))
			var sb strings.Builder
			for range rng.IntN(12) {
				sb.WriteString(words[rng.IntN(len(words))])
				sb.WriteString([]string{" ", ", ", ". "}[rng.IntN(3)])
			}
			texts[row] = sb.String()
			b.Add(row, sb.String())
		}
		ix, err := b.Index(context.Background())
		require.NoError(t, err)
		decoded, err := Decode(ix.Encode())
		require.NoError(t, err)
		deleted := roaring.New()
		for r := range texts {
			if rng.IntN(4) == 0 {
				deleted.Add(r)
			}
		}
		deleted.Add(row + 100) // a row the index does not hold
		q, err := ParseQuery(words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))])
		require.NoError(t, err)
		want := q.NewStats()
		var matches []RowDoc
		for r, text := range texts {
			if deleted.Contains(r) {
				continue
			}
			d, ok := q.Match(text)
			if ok {
				matches = append(matches, RowDoc{Row: r, Doc: d})
				want.AddDoc(d.Len, &d)
			} else {
				want.AddDoc(d.Len, nil)
			}
		}
		sc := NewScorer(want)
		k := 1 + rng.IntN(40)
		wantTop := TopDocs(matches, sc, k)
		for _, index := range []*Index{ix, decoded} {
			got := q.NewStats()
			index.Count(q, deleted, &got)
			require.Equal(t, want, got, "round %d", round)
			require.Equal(t, wantTop, index.Top(q, deleted, sc, k), "round %d", round)
			if deleted.GetCardinality() == 1 { // only the row the index does not hold
				nothing := q.NewStats()
				index.Count(q, nil, &nothing)
				require.Equal(t, want, nothing)
			}
		}
		for i := 1; i < len(wantTop); i++ {
			require.True(t, better(wantTop[i-1], wantTop[i]), "best first")
		}
	}
}

func TestScoresRankRarerAndDenserMatchesHigher(t *testing.T) {
	q, err := ParseQuery("payments runbook")
	require.NoError(t, err)
	st := q.NewStats()
	docs := []string{"payments runbook", "payments payments", "payments", "unrelated words here", "more filler text"}
	var matches []Doc
	for _, d := range docs {
		m, ok := q.Match(d)
		if ok {
			matches = append(matches, m)
			st.AddDoc(m.Len, &m)
		} else {
			st.AddDoc(m.Len, nil)
		}
	}
	sc := NewScorer(st)
	require.Greater(t, sc.Score(matches[0]), sc.Score(matches[2]), "both terms beat one")
	require.Greater(t, sc.Score(matches[1]), sc.Score(matches[2]), "a repeated term beats a single one of equal length")
}

func TestDecodeRejectsEveryCorruption(t *testing.T) {
	b := NewBuilder()
	b.Add(1, "alpha beta beta")
	b.Add(4, "gamma alpha")
	ix, err := b.Index(context.Background())
	require.NoError(t, err)
	data := ix.Encode()
	_, err = Decode(data)
	require.NoError(t, err)
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x41
		_, err := Decode(bad)
		require.ErrorIs(t, err, ErrCorrupt, "byte %d flipped", i)
	}
	for n := range len(data) {
		_, err := Decode(data[:n])
		require.ErrorIs(t, err, ErrCorrupt, "cut at %d", n)
	}
}

func FuzzDecode(f *testing.F) {
	b := NewBuilder()
	b.Add(0, "alpha beta")
	b.Add(7, "beta gamma gamma")
	ix, _ := b.Index(context.Background())
	f.Add(ix.Encode())
	f.Add([]byte("STXI"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := Decode(data)
		if err != nil {
			return
		}
		// A decoded index is safe to search with any query.
		q := Query{Terms: append([]string(nil), ix.terms...)}
		st := q.NewStats()
		ix.Count(q, roaring.BitmapOf(0, 1, 2), &st)
		if st.Docs < 0 || st.Tokens < 0 {
			t.Fatalf("negative statistics %+v", st)
		}
		ix.Top(q, roaring.BitmapOf(0, 1, 2), NewScorer(st), 10)
	})
}
