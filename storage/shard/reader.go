// Row access to sealed generations. A format 2 generation is a key file pointing into the
// shard's WAL entries, which stay on storage until the generation is merged; a format 1
// generation (earlier releases) is a key file plus an Arrow IPC file whose row i is key i.
//
// Lifetime rule: a generation's objects (key file, entries or file) are deleted only after the
// table's watermark covers it, so a reader whose snapshot still lists it may find them gone and
// gets objstore.ErrNotFound: the table version it reads next has the rows.
package shard

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/cache"
)

// KeyFile returns a generation's key file, from the cache when possible.
func (a *Access) KeyFile(ctx context.Context, g Generation) (*KeyFile, error) {
	if k, ok := cache.Get[*KeyFile](a.cache, "keys", g.KeysPath); ok {
		return k, nil
	}
	data, err := a.Objects.Get(ctx, g.KeysPath)
	if err != nil {
		return nil, err
	}
	k, err := decodeKeys(data, g.EntryBacked())
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, g.KeysPath)
	}
	cache.Add(a.cache, "keys", g.KeysPath, k, k.approxBytes())
	return k, nil
}

// readRows decodes an object that holds rows — a WAL entry (entry=true; laid out as the table
// schema) or a format 1 generation file — into its batches in order (the object's rows are
// numbered across them) and returns them with the object's size. The caller releases them.
func (a *Access) readRows(ctx context.Context, key string, entry bool) ([]arrow.RecordBatch, int64, error) {
	data, err := a.Objects.Get(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	var recs []arrow.RecordBatch
	if entry { // the batches share data: it holds just this entry, read for this call
		recs, err = decodeEntry(data, a.Schema, a.KeyColumn, a.Allocator, true)
	} else {
		recs, err = decodeFile(data, a.KeyColumn, a.Allocator)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w (%s)", err, key)
	}
	return recs, int64(len(data)), nil
}

// readEntry decodes the WAL entry at pos, stored at loc (a segment frame, checked before it is
// decoded, or the entry object), into its batches; the caller releases them.
func (a *Access) readEntry(ctx context.Context, shard string, pos uint64, loc walLoc) ([]arrow.RecordBatch, error) {
	if loc.Segment == "" {
		recs, _, err := a.readRows(ctx, EntryKey(shard, pos), true)
		return recs, err
	}
	payload, err := a.readEntryBytes(ctx, shard, pos, loc)
	if err != nil {
		return nil, err
	}
	// The batches share the frame's bytes, read for this call: merges and reads release them
	// when done (nothing keeps them, so nothing keeps a larger read alive).
	recs, err := decodeEntry(payload, a.Schema, a.KeyColumn, a.Allocator, true)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, loc.cacheKey(shard, pos))
	}
	return recs, nil
}

// readEntryCached is readEntry through the object cache: the entry's bytes are kept there (an
// entry is immutable), and its batches decoded from them, sharing them.
func (a *Access) readEntryCached(ctx context.Context, shard string, pos uint64, loc walLoc) ([]arrow.RecordBatch, error) {
	key := loc.cacheKey(shard, pos)
	data, ok := cache.Get[[]byte](a.cache, "wal_entry", key)
	if !ok {
		var err error
		if data, err = a.readEntryBytes(ctx, shard, pos, loc); err != nil {
			return nil, err
		}
		cache.Add(a.cache, "wal_entry", key, data, int64(len(data)))
	}
	recs, err := decodeEntry(data, a.Schema, a.KeyColumn, a.Allocator, true)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, key)
	}
	return recs, nil
}

// readEntryBytes returns the encoded WAL entry at pos, stored at loc: the entry object, or the
// payload of the segment frame there (checked: an intact frame of that position and length).
func (a *Access) readEntryBytes(ctx context.Context, shard string, pos uint64, loc walLoc) ([]byte, error) {
	if loc.Segment == "" {
		return a.Objects.Get(ctx, EntryKey(shard, pos))
	}
	data, err := a.Objects.GetRange(ctx, SegmentKey(shard, loc.Segment), loc.Offset, FrameHeaderSize+loc.Length)
	if err != nil {
		return nil, err
	}
	return checkFrame(data, shard, pos, loc)
}

// GenerationRows returns every row a generation holds, for a merge: format 2, the rows of the
// entries its key file references (superseded versions of a key included: the upsert keeps the
// newest _seq); format 1, its file. The caller releases the records.
func (a *Access) GenerationRows(ctx context.Context, shard string, g Generation) ([]arrow.RecordBatch, error) {
	if !g.EntryBacked() {
		recs, _, err := a.readRows(ctx, g.Path, false)
		return recs, err
	}
	k, err := a.KeyFile(ctx, g)
	if err != nil {
		return nil, err
	}
	var out []arrow.RecordBatch
	for i, pos := range k.entries {
		recs, err := a.readEntry(ctx, shard, pos, k.locs[i])
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// RowReader resolves rows of pending generations for one read, reading each WAL entry
// (object or segment frame) or format 1 file at most once. Not safe for concurrent use.
type RowReader struct {
	a      *Access
	loaded map[string][]arrow.RecordBatch // by object key, the object's batches in row order
	// cacheEntries: WAL entries' bytes are kept in the process's object cache, for reads that
	// come back to the same pending rows again and again (searches).
	cacheEntries bool
}

func (a *Access) NewRowReader() *RowReader {
	return &RowReader{a: a, loaded: map[string][]arrow.RecordBatch{}}
}

// NewCachingRowReader is NewRowReader for reads that return to the same pending rows read after
// read (searches rank every pending row and read the best of them): the WAL entries it reads
// stay in the process's object cache (an entry is immutable), so the next read decodes them from
// memory instead of reading them from storage again.
func (a *Access) NewCachingRowReader() *RowReader {
	return &RowReader{a: a, loaded: map[string][]arrow.RecordBatch{}, cacheEntries: true}
}

// Row locates key i of generation g (of shard, key file k): the record holding it and its row
// there. The record stays owned by the reader.
func (r *RowReader) Row(ctx context.Context, shard string, g Generation, k *KeyFile, i int) (arrow.RecordBatch, int, error) {
	key, row := g.Path, i
	var pos uint64
	var loc walLoc
	if g.EntryBacked() {
		pos, loc = k.entries[k.entry[i]], k.locs[k.entry[i]]
		key, row = loc.cacheKey(shard, pos), int(k.row[i])
	}
	recs, ok := r.loaded[key]
	if !ok {
		var err error
		switch {
		case g.EntryBacked() && r.cacheEntries:
			recs, err = r.a.readEntryCached(ctx, shard, pos, loc)
		case g.EntryBacked():
			recs, err = r.a.readEntry(ctx, shard, pos, loc)
		default:
			recs, _, err = r.a.readRows(ctx, key, false)
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
	return nil, 0, fmt.Errorf("shard: %s has no row %d (key file %s)", key, int(k.row[i]), g.KeysPath)
}

func (r *RowReader) Release() {
	for _, recs := range r.loaded {
		releaseAll(recs)
	}
	r.loaded = nil
}
