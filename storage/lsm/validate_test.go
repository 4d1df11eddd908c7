package lsm

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
	"github.com/strata-store/strata/storage/table"
)

func TestInvalidBatchesAreRefusedBeforeTheWAL(t *testing.T) {
	e := newEnv(t, objstoretest.NewMemory())
	s := e.open("a")
	ids := badOffsets()
	defer ids.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)
	bad := array.NewRecordBatch(schema, []arrow.Array{ids}, 2)
	defer bad.Release()
	_, err := s.Append(context.Background(), bad)
	require.ErrorIs(t, err, table.ErrSchema)
	require.Contains(t, err.Error(), `column "id"`)

	dup := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "id", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{ids, ids}, 2)
	defer dup.Release()
	_, err = s.Append(context.Background(), dup)
	require.ErrorIs(t, err, table.ErrSchema)

	_, err = s.Delete(context.Background(), []string{""})
	require.ErrorIs(t, err, table.ErrSchema)
	_, err = s.Delete(context.Background(), []string{"\xff"})
	require.ErrorIs(t, err, table.ErrSchema)

	appendIDs(t, s, e.mem, 1, "ok")
	rec, err := s.Get(context.Background(), "ok", nil)
	require.NoError(t, err)
	require.NotNil(t, rec)
	rec.Release()
	require.NoError(t, s.Close(context.Background()))
}

// The whole append path on any bytes: decoded as a client's Arrow IPC body, appended (validated
// before the WAL), the process crashed and the store reopened (replay): nothing panics, a
// rejected batch leaves nothing behind, and every row of an accepted one is read back.
func FuzzAppendAndReplay(f *testing.F) {
	mem := memory.NewGoAllocator()
	rec := rows(mem, []string{"a", "b"}, 7)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	require.NoError(f, w.Write(rec))
	require.NoError(f, w.Close())
	rec.Release()
	f.Add(buf.Bytes())
	ids := badOffsets()
	var bad bytes.Buffer
	schema := arrow.NewSchema(userSchema.Fields()[:1], nil)
	bw := ipc.NewWriter(&bad, ipc.WithSchema(schema))
	br := array.NewRecordBatch(schema, []arrow.Array{ids}, 2)
	require.NoError(f, bw.Write(br))
	require.NoError(f, bw.Close())
	br.Release()
	ids.Release()
	f.Add(bad.Bytes())
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.Background()
		parts, schema, err := arrowutil.ReadBytesBatches(body, memory.NewGoAllocator(), 1<<20)
		if err != nil {
			return
		}
		defer releaseAll(parts)
		for _, p := range parts {
			if arrowutil.ValidateRecord(p) != nil {
				return // the API refuses the body before joining its batches
			}
		}
		joined, err := arrowutil.Concat(schema, parts, memory.NewGoAllocator())
		if err != nil {
			return
		}
		defer joined.Release()
		objects := objstoretest.NewMemory()
		e := newEnv(t, objects)
		s := e.open("fuzz")
		_, appendErr := s.Append(ctx, joined)
		if s.residentWriter() != nil {
			crash(s)
		} else {
			require.NoError(t, s.Close(ctx))
		}
		again := e.open("fuzz")
		defer again.Close(ctx)
		if appendErr != nil {
			res, err := again.Scan(ctx, ScanOptions{Limit: 10})
			require.NoError(t, err)
			defer res.Rows.Release()
			require.Zero(t, res.Rows.NumRows(), "a rejected batch left rows behind")
			return
		}
		keys := joined.Column(joined.Schema().FieldIndices("id")[0]).(*array.String)
		for i := 0; i < keys.Len(); i++ {
			got, err := again.Get(ctx, keys.Value(i), nil)
			require.NoError(t, err)
			require.NotNil(t, got, "acknowledged row %q lost", keys.Value(i))
			got.Release()
		}
	})
}
