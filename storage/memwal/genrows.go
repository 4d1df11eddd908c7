// Row access to sealed generations. A format 2 generation is a key file pointing into the
// shard's WAL entries, which stay on storage until the generation is merged; a format 1
// generation (earlier releases) is a key file plus an Arrow IPC file whose row i is key i.
//
// Lifetime rule: a generation's objects (key file, entries or file) are deleted only after the
// table's watermark covers it, so a reader whose snapshot still lists it may find them gone and
// gets objstore.ErrNotFound: the table version it reads next has the rows.
package memwal

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/cache"
)

// keys returns a generation's key file, from the cache when possible.
func (s *Store) keys(ctx context.Context, g Generation) (*genKeys, error) {
	if k, ok := cache.Get[*genKeys](s.cache, "keys", g.KeysPath); ok {
		return k, nil
	}
	data, err := s.objects.Get(ctx, g.KeysPath)
	if err != nil {
		return nil, err
	}
	k, err := decodeKeys(data, g.entryBacked())
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, g.KeysPath)
	}
	cache.Add(s.cache, "keys", g.KeysPath, k, k.approxBytes())
	return k, nil
}

// readRows decodes an object that holds rows — a WAL entry (entry=true; laid out as the table
// schema) or a format 1 generation file — into its batches in order (the object's rows are
// numbered across them) and returns them with the object's size. The caller releases them.
func (s *Store) readRows(ctx context.Context, key string, entry bool) ([]arrow.RecordBatch, int64, error) {
	data, err := s.objects.Get(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	var recs []arrow.RecordBatch
	if entry {
		recs, err = decodeEntry(data, s.schema, s.keyColumn, s.mem)
	} else {
		recs, err = decodeFile(data, s.keyColumn, s.mem)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w (%s)", err, key)
	}
	return recs, int64(len(data)), nil
}

// readEntry decodes the WAL entry at pos, stored at loc (a segment frame, checked before it is
// decoded, or the entry object), into its batches; the caller releases them.
func (s *Store) readEntry(ctx context.Context, shard string, pos uint64, loc walLoc) ([]arrow.RecordBatch, error) {
	if loc.Segment == "" {
		recs, _, err := s.readRows(ctx, entryKey(shard, pos), true)
		return recs, err
	}
	data, err := s.objects.GetRange(ctx, segmentKey(shard, loc.Segment), loc.Offset, frameHeaderSize+loc.Length)
	if err != nil {
		return nil, err
	}
	payload, err := checkFrame(data, shard, pos, loc)
	if err != nil {
		return nil, err
	}
	recs, err := decodeEntry(payload, s.schema, s.keyColumn, s.mem)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, loc.cacheKey(shard, pos))
	}
	return recs, nil
}

// generationRows returns every row a generation holds, for a merge: format 2, the rows of the
// entries its key file references (superseded versions of a key included: the upsert keeps the
// newest _seq); format 1, its file. The caller releases the records.
func (s *Store) generationRows(ctx context.Context, shard string, g Generation) ([]arrow.RecordBatch, error) {
	if !g.entryBacked() {
		recs, _, err := s.readRows(ctx, g.Path, false)
		return recs, err
	}
	k, err := s.keys(ctx, g)
	if err != nil {
		return nil, err
	}
	var out []arrow.RecordBatch
	for i, pos := range k.entries {
		recs, err := s.readEntry(ctx, shard, pos, k.locs[i])
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// genRowReader resolves rows of pending generations for one read, reading each WAL entry
// (object or segment frame) or format 1 file at most once. Not safe for concurrent use.
type genRowReader struct {
	s      *Store
	loaded map[string][]arrow.RecordBatch // by object key, the object's batches in row order
}

func newGenRowReader(s *Store) *genRowReader {
	return &genRowReader{s: s, loaded: map[string][]arrow.RecordBatch{}}
}

// row locates key i of generation g (of shard, key file k): the record holding it and its row
// there. The record stays owned by the reader.
func (r *genRowReader) row(ctx context.Context, shard string, g Generation, k *genKeys, i int) (arrow.RecordBatch, int, error) {
	key, row := g.Path, i
	var pos uint64
	var loc walLoc
	if g.entryBacked() {
		pos, loc = k.entries[k.entry[i]], k.locs[k.entry[i]]
		key, row = loc.cacheKey(shard, pos), int(k.row[i])
	}
	recs, ok := r.loaded[key]
	if !ok {
		var err error
		if g.entryBacked() {
			recs, err = r.s.readEntry(ctx, shard, pos, loc)
		} else {
			recs, _, err = r.s.readRows(ctx, key, false)
		}
		if err != nil {
			return nil, 0, err
		}
		r.loaded[key] = recs
	}
	for _, rec := range recs {
		if int64(row) < rec.NumRows() {
			return rec, row, nil
		}
		row -= int(rec.NumRows())
	}
	return nil, 0, fmt.Errorf("memwal: %s has no row %d (key file %s)", key, int(k.row[i]), g.KeysPath)
}

func (r *genRowReader) release() {
	for _, recs := range r.loaded {
		releaseAll(recs)
	}
	r.loaded = nil
}
