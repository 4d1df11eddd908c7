package predicate

import (
	"context"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// likeOracle matches through Go's regexp package (an automaton, linear time): the reference the
// compiled matcher is checked against.
func likeOracle(s, pattern string) bool {
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	for i := 0; i < len(pattern); {
		r := []rune(pattern[i:])[0]
		n := len(string(r))
		switch r {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		case '\\':
			if i+n < len(pattern) {
				i += n
				r = []rune(pattern[i:])[0]
				n = len(string(r))
			}
			b.WriteString(regexp.QuoteMeta(string(r)))
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
		i += n
	}
	b.WriteString(`\z`)
	return regexp.MustCompile(b.String()).MatchString(s)
}

func TestLikeMatchesTheAutomatonOnRandomPatterns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 51))
	alphabet := []string{"a", "b", "é", "%", "_", "\\"}
	text := []string{"a", "b", "é", "%", "_", "\\"}
	gen := func(from []string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(from[rng.IntN(len(from))])
		}
		return b.String()
	}
	for range 200_000 {
		pattern := gen(alphabet, rng.IntN(8))
		s := gen(text, rng.IntN(10))
		require.Equal(t, likeOracle(s, pattern), like(s, pattern), "%q LIKE %q", s, pattern)
	}
	for _, c := range []struct {
		s, p string
		want bool
	}{
		{"", "", true}, {"", "%", true}, {"", "_", false}, {"a", "", false}, {"abc", "a%c", true},
		{"ac", "a%_c", false}, {"abc", "%b%", true}, {"abc", "%%%", true}, {"a", "a\\", false},
		{"a\\", "a\\", true}, {"a%", "a\\%", true}, {"ab", "a\\%", false}, {"ééa", "__a", true},
		{"aaa", "a%a%a", true}, {"aa", "a%a%a", false},
	} {
		require.Equal(t, c.want, like(c.s, c.p), "%q LIKE %q", c.s, c.p)
	}
}

// The adversarial patterns a backtracking matcher takes exponential time on (many wildcards that
// almost match) are linear here: each well under a millisecond over a 64-character value.
func TestAdversarialLikePatternsAreLinear(t *testing.T) {
	value := strings.Repeat("a", 63) + "b"
	for _, pattern := range AdversarialLikePatterns() {
		m := compileLike(pattern)
		start := time.Now()
		for range 100 {
			m.match(value)
		}
		require.Less(t, time.Since(start), 200*time.Millisecond, "100 matches of %q", pattern)
	}
}

// A done context stops a filter's evaluation between rows, not after the batch.
func TestSelectStopsWhenTheContextIsDone(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	sch := arrow.NewSchema([]arrow.Field{{Name: "role", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(mem, sch)
	defer b.Release()
	long := strings.Repeat("x", 4096)
	for range 4096 {
		b.Field(0).(*array.StringBuilder).Append(long)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	e, err := Parse("role LIKE '%y%' OR role LIKE '%z%'", sch)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Select(ctx, e, rec)
	require.ErrorIs(t, err, context.Canceled)
	keep, err := Select(context.Background(), e, rec)
	require.NoError(t, err)
	require.Len(t, keep, 4096)
}

// An IN list answers the same through its lookup set as through value-by-value comparison.
func TestInListLookupAgreesWithComparison(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rows := []row{{id: "a", role: p("user"), step: p[int64](3)}, {id: "b", role: p("tool"), step: p[int64](5)}, {id: "c"}}
	require.Equal(t, []string{"a"}, selected(t, mem, "role IN ('user', 'x')", rows))
	require.Equal(t, []string{"b"}, selected(t, mem, "role NOT IN ('user', 'x')", rows))
	require.Equal(t, []string(nil), selected(t, mem, "role NOT IN ('user', NULL)", rows))
	require.Equal(t, []string{"b"}, selected(t, mem, "step IN (5, 7)", rows))
	require.Equal(t, []string{"b"}, selected(t, mem, "step IN (5.0, 7.5)", rows))
	require.Equal(t, []string{"a"}, selected(t, mem, "step NOT IN (5, 7)", rows))
}
