package lsm

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storage/textindex"
	"github.com/strata-store/strata/storage/vecindex"
)

var searchUserSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "body", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "emb", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
}, nil)

const (
	crashChildEnv = "STRATA_TEST_INDEX_BUILD_CHILD" // the store directory a child process indexes
	crashDim      = 32
)

var (
	crashVectorOpts = VectorIndexOptions{Column: "emb", Metric: vecindex.Cosine, MinRows: 100}
	crashTextOpts   = TextIndexOptions{Column: "body", MinRows: 100}
)

// TestIndexBuildChild is the child of TestAnIndexBuildKilledMidwayChangesNothingVisible: it
// builds the store's search indexes a fragment at a time until it is killed.
func TestIndexBuildChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("run by TestAnIndexBuildKilledMidwayChangesNothingVisible")
	}
	ctx := context.Background()
	objects, err := objstore.NewLocal(dir)
	require.NoError(t, err)
	s, err := Open(ctx, objects, Options{Instance: "builder", Allocator: memory.DefaultAllocator})
	require.NoError(t, err)
	fmt.Println("building")
	for {
		v, err := s.BuildVectorIndexes(ctx, VectorIndexOptions{Column: "emb", Metric: vecindex.Cosine, MinRows: 100, MaxFragments: 1})
		require.NoError(t, err)
		x, err := s.BuildTextIndexes(ctx, TextIndexOptions{Column: "body", MinRows: 100, MaxFragments: 1})
		require.NoError(t, err)
		if v.Fragments == 0 && x.Fragments == 0 {
			fmt.Println("done")
			time.Sleep(time.Hour) // wait to be killed
		}
	}
}

// A process building search indexes is killed (-9) at a random moment, several times: every
// answer a search gives is the same before, between and after the kills; the table's invariants
// hold at every version; the next build converges (every fragment indexed), and cleanup collects
// the index objects the killed builds wrote but never committed.
func TestAnIndexBuildKilledMidwayChangesNothingVisible(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()
	dir := t.TempDir()
	objects, err := objstore.NewLocal(dir)
	require.NoError(t, err)
	e := newInPlaceEnv(t, objects)
	s, err := Create(ctx, objects, searchUserSchema, "id", e.opts("w1"))
	require.NoError(t, err)
	defer func() { _ = s.Close(context.Background()) }()
	rng := rand.New(rand.NewPCG(41, 42))
	words := []string{"alpha", "beta", "gamma", "delta", "payments", "runbook", "deploy", "incident"}
	vectors := map[string][]float32{}
	for batch := range 6 {
		b := array.NewRecordBuilder(e.mem, searchUserSchema)
		for i := range 1500 {
			id := fmt.Sprintf("k%d-%04d", batch, i)
			b.Field(0).(*array.StringBuilder).Append(id)
			b.Field(1).(*array.StringBuilder).Append(words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))])
			v := make([]float32, crashDim)
			for j := range v {
				v[j] = float32(rng.NormFloat64())
			}
			vectors[id] = v
			lb := b.Field(2).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Float32Builder).AppendValues(v, nil)
		}
		rec := b.NewRecordBatch()
		b.Release()
		_, err := s.Append(ctx, rec)
		rec.Release()
		require.NoError(t, err)
		require.NoError(t, s.Flush(ctx))
		_, err = s.Merge(ctx, MergeOptions{}, 4)
		require.NoError(t, err)
	}
	query, err := textindex.ParseQuery("payments runbook")
	require.NoError(t, err)
	probe := "k3-0042"
	type answer struct {
		text    []string
		scores  []float32
		nearest string
	}
	answers := func() answer {
		t.Helper()
		res, err := s.SearchText(ctx, TextQuery{Column: "body", Query: query, K: 50, Columns: []string{"id"}})
		require.NoError(t, err)
		defer res.Rows.Release()
		var a answer
		ids := res.Rows.Column(0).(*array.String)
		for i := 0; i < ids.Len(); i++ {
			a.text = append(a.text, ids.Value(i))
		}
		a.scores = res.Scores
		near, err := s.Nearest(ctx, NearestQuery{Column: "emb", Metric: vecindex.Cosine, Query: vectors[probe], K: 1, Columns: []string{"id"}})
		require.NoError(t, err)
		defer near.Rows.Release()
		a.nearest = near.Rows.Column(0).(*array.String).Value(0)
		return a
	}
	before := answers()
	require.Equal(t, probe, before.nearest)
	require.Len(t, before.text, 50)

	checkLatest := func() {
		t.Helper()
		m, err := s.TableManifest(ctx)
		require.NoError(t, err)
		require.NoError(t, s.CheckTable(ctx, m))
	}
	for kill := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIndexBuildChild$", "-test.v")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := bufio.NewScanner(out)
		for lines.Scan() && !strings.Contains(lines.Text(), "building") {
		}
		time.Sleep(time.Duration(rng.IntN(40*(kill+1))) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		m, err := s.TableManifest(ctx)
		require.NoError(t, err)
		indexed := 0
		for _, f := range m.Fragments {
			if f.VectorIndex != nil {
				indexed++
			}
			if f.TextIndex != nil {
				indexed++
			}
		}
		t.Logf("kill %d: %d of %d search indexes committed", kill, indexed, 2*len(m.Fragments))
		checkLatest()
		require.Equal(t, before, answers(), "after kill %d", kill)
	}
	// The next build converges: every fragment indexed, the answers unchanged.
	_, err = s.BuildVectorIndexes(ctx, crashVectorOpts)
	require.NoError(t, err)
	_, err = s.BuildTextIndexes(ctx, crashTextOpts)
	require.NoError(t, err)
	left, err := s.FragmentsWithoutSearchIndexes(ctx, crashVectorOpts, crashTextOpts)
	require.NoError(t, err)
	require.Zero(t, left)
	checkLatest()
	after := answers()
	require.Equal(t, before.text, after.text)
	require.InDeltaSlice(t, before.scores, after.scores, 1e-6)
	require.Equal(t, probe, after.nearest)

	// Cleanup collects the objects of builds that never committed.
	listed, err := objstore.ListAll(ctx, objects, "")
	require.NoError(t, err)
	written := 0
	for _, o := range listed {
		if strings.HasSuffix(o.Key, ".svix") || strings.HasSuffix(o.Key, ".stxi") {
			written++
		}
	}
	t.Logf("%d index objects before cleanup", written)
	_, err = s.CleanupVersions(ctx, table.CleanupOptions{OlderThan: time.Nanosecond, Grace: time.Nanosecond})
	require.NoError(t, err)
	m, err := s.TableManifest(ctx)
	require.NoError(t, err)
	named := map[string]bool{}
	for _, f := range m.Fragments {
		require.NotNil(t, f.VectorIndex)
		require.NotNil(t, f.TextIndex)
		named[f.VectorIndex.Path], named[f.TextIndex.Path] = true, true
	}
	all, err := objstore.ListAll(ctx, objects, "")
	require.NoError(t, err)
	indexObjects := 0
	for _, o := range all {
		if strings.HasSuffix(o.Key, ".svix") || strings.HasSuffix(o.Key, ".stxi") {
			indexObjects++
			require.True(t, named[o.Key] || named[strings.TrimPrefix(o.Key, "table/")], "an index object no version names: %s", o.Key)
		}
	}
	require.Equal(t, len(named), indexObjects)
	require.Equal(t, before.text, answers().text)
}
