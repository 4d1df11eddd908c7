// WAL entries and generation files are Arrow IPC: entries as IPC streams (one per group commit),
// generations as IPC files (one record batch, sorted by key). Key files list a generation's keys
// in order with their _seq and tombstone flag, so reads resolve a key without opening the
// generation.
package memwal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/strata-store/strata/storage/arrowutil"
)

func encodeStream(rec arrow.RecordBatch, mem memory.Allocator) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeStream returns every record of an IPC stream, concatenated into one.
func decodeStream(data []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	rec, err := arrowutil.ReadStream(bytes.NewReader(data), mem)
	if err != nil {
		return nil, fmt.Errorf("memwal: corrupt WAL entry: %w", err)
	}
	return rec, nil
}

func encodeFile(rec arrow.RecordBatch, mem memory.Allocator) ([]byte, error) {
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeFile(data []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	r, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("memwal: corrupt generation: %w", err)
	}
	defer r.Close()
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			return nil, fmt.Errorf("memwal: corrupt generation: %w", err)
		}
		parts = append(parts, rec)
	}
	return arrowutil.Concat(r.Schema(), parts, mem)
}

// genKeys is a generation's key file, decoded: keys ascending, one per key.
type genKeys struct {
	keys  []string
	seqs  []uint64
	tombs []bool
}

func (k *genKeys) find(key string) (int, bool) {
	lo, hi := 0, len(k.keys)
	for lo < hi {
		mid := (lo + hi) / 2
		if k.keys[mid] < key {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < len(k.keys) && k.keys[lo] == key
}

func encodeKeys(k *genKeys) []byte {
	var buf bytes.Buffer
	var tmp [binary.MaxVarintLen64]byte
	put := func(v uint64) { buf.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	put(uint64(len(k.keys)))
	for i, key := range k.keys {
		put(uint64(len(key)))
		buf.WriteString(key)
		put(k.seqs[i])
		if k.tombs[i] {
			buf.WriteByte(1)
		} else {
			buf.WriteByte(0)
		}
	}
	return buf.Bytes()
}

var errCorruptKeys = errors.New("memwal: corrupt generation key file")

func decodeKeys(data []byte) (*genKeys, error) {
	n, w := binary.Uvarint(data)
	if w <= 0 || n > uint64(len(data)) {
		return nil, errCorruptKeys
	}
	data = data[w:]
	k := &genKeys{keys: make([]string, 0, n), seqs: make([]uint64, 0, n), tombs: make([]bool, 0, n)}
	for i := uint64(0); i < n; i++ {
		l, w := binary.Uvarint(data)
		if w <= 0 || uint64(len(data)-w) < l+1 {
			return nil, errCorruptKeys
		}
		key := string(data[w : w+int(l)])
		data = data[w+int(l):]
		seq, w2 := binary.Uvarint(data)
		if w2 <= 0 || len(data) < w2+1 {
			return nil, errCorruptKeys
		}
		tomb := data[w2] == 1
		data = data[w2+1:]
		if i > 0 && key <= k.keys[len(k.keys)-1] {
			return nil, errCorruptKeys
		}
		k.keys, k.seqs, k.tombs = append(k.keys, key), append(k.seqs, seq), append(k.tombs, tomb)
	}
	return k, nil
}
