package shard

import (
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"
)

// A sealed generation's key file stays in the object cache after its memtable is gone: its keys
// must not point into the appended batches, or the cache would keep every request body alive.
func TestAKeyFileHoldsCopiesOfTheKeysNotViewsOfTheBatches(t *testing.T) {
	mem := checkedAlloc(t)
	rec := stampedRows(mem, []string{"b", "a", "c", "a"}, 7)
	defer rec.Release()
	m := newMemtable()
	m.insert([]arrow.RecordBatch{rec}, 1, walLoc{}, 100, "id")
	ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.String)
	data := ids.ValueBytes()
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	hi := lo + uintptr(len(data))

	kf := m.keyFile()
	m.release()
	require.Equal(t, []string{"a", "b", "c"}, kf.Keys)
	for _, k := range kf.Keys {
		p := uintptr(unsafe.Pointer(unsafe.StringData(k)))
		require.False(t, p >= lo && p < hi, "key %q points into the batch's id buffer", k)
	}
}
