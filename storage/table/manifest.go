// Manifests: one immutable JSON document per table version at _versions/<20-digit version>.json.
// Creating that object with PutIfAbsent is the commit. _latest is a best-effort hint of the newest
// version (never trusted alone: readers probe forward from it).
package table

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/fragment"
	"github.com/strata-store/strata/storage/objstore"
)

// FormatVersion is the manifest format this package writes and reads.
const FormatVersion = 1

const (
	versionsDir = "_versions/"
	latestHint  = "_latest"
	dataDir     = "data/"
	deletesDir  = "deletions/"
	indexDir    = "index/"
	vectorsDir  = "vectors/"
	textDir     = "text/"
)

// ErrNotFound: the table or the requested version does not exist.
var ErrNotFound = errors.New("table not found")

// ErrConflict: a commit kept losing the race for the next version (after bounded retries), or
// the table already exists with another definition.
var ErrConflict = errors.New("commit conflict")

// Fragment is one immutable data file and its deletions.
type Fragment struct {
	ID             uint64 `json:"id"`
	Path           string `json:"path"`
	Rows           int64  `json:"rows"`
	DeletedRows    int64  `json:"deleted_rows"`
	DeletionFile   string `json:"deletion_file,omitempty"`
	DeletionOffset int64  `json:"deletion_offset,omitempty"`
	DeletionLength int64  `json:"deletion_length,omitempty"`
	Bytes          int64  `json:"bytes"`
	MinKey         string `json:"min_key"`
	MaxKey         string `json:"max_key"`
	// Uncompressed: the fragment's pages were written without compression (a WAL merge's
	// fragment under the compaction target); compaction rewrites it compressed, with its size
	// tier or once the table is idle (CompactionConfig.CompressIdleAfter).
	Uncompressed bool `json:"uncompressed,omitempty"`
	// VectorIndex, when set, is the fragment's vector index (vectors.go): an approximate
	// nearest-neighbour index over one column of its rows, immutable like the fragment.
	VectorIndex *VectorIndexRef `json:"vector_index,omitempty"`
	// TextIndex, when set, is the fragment's full-text index (textindex.go): an inverted file
	// over one string column of its rows, immutable like the fragment.
	TextIndex *TextIndexRef `json:"text_index,omitempty"`
}

// Ref names the fragment's data file for the fragment package.
func (f Fragment) Ref() fragment.Ref { return fragment.Ref{Path: f.Path, Bytes: f.Bytes} }

// LiveRows is the number of rows not deleted.
func (f Fragment) LiveRows() int64 { return f.Rows - f.DeletedRows }

// IndexRun is one immutable sorted run of the key index.
type IndexRun struct {
	Path    string `json:"path"`
	Entries int64  `json:"entries"`
	Bytes   int64  `json:"bytes"`
}

// KeyIndex describes the exact key index: its runs, oldest first (a newer run's entry
// for a key supersedes an older one's), and the fragments whose every row it indexes.
type KeyIndex struct {
	Runs    []IndexRun `json:"segments"` // stored as "segments" (the name of earlier releases)
	Covered []uint64   `json:"covered_fragments"`
}

// Counters accumulate over a table's life.
type Counters struct {
	Upserts      uint64 `json:"upserts"`
	RowsUpserted uint64 `json:"rows_upserted"`
	Merges       uint64 `json:"merges"`
	Compactions  uint64 `json:"compactions"`
	IndexBuilds  uint64 `json:"index_builds"`
	// DroppedBytes sums the bytes of the files (fragments, deletion vectors, index runs) that
	// commits stopped referencing: garbage until version cleanup deletes them. Storage holds
	// about DroppedBytes(latest) - DroppedBytes(oldest retained version) of it.
	DroppedBytes uint64 `json:"dropped_bytes,omitempty"`
}

// Manifest is one version of a table.
type Manifest struct {
	FormatVersion int               `json:"format_version"`
	Version       uint64            `json:"version"`
	CreatedAt     time.Time         `json:"created_at"`
	Operation     string            `json:"operation"`
	KeyColumn     string            `json:"key_column"`
	Fields        []fieldJSON       `json:"schema"`
	Fragments     []Fragment        `json:"fragments"`
	KeyIndex      *KeyIndex         `json:"key_index,omitempty"`
	WALWatermarks map[string]uint64 `json:"wal_watermarks,omitempty"`
	MaxSeq        uint64            `json:"max_seq"`
	Counters      Counters          `json:"counters"`
	LastMergeAt   *time.Time        `json:"last_merge_at,omitempty"`
	LastCompactAt *time.Time        `json:"last_compact_at,omitempty"`
	LastIndexAt   *time.Time        `json:"last_index_at,omitempty"`

	schema *arrow.Schema // decoded Fields
}

// approxBytes estimates the memory a decoded manifest holds (for the object cache).
func (m *Manifest) approxBytes() int64 {
	n := int64(1024 + 128*len(m.Fields) + 64*len(m.WALWatermarks))
	for _, f := range m.Fragments {
		n += 256 + int64(len(f.Path)+len(f.DeletionFile))
	}
	if m.KeyIndex != nil {
		n += 192 * int64(len(m.KeyIndex.Runs))
	}
	return n
}

// Schema is the table's Arrow schema, internal columns included.
func (m *Manifest) Schema() *arrow.Schema { return m.schema }

// Rows is the number of live rows, tombstones included.
func (m *Manifest) Rows() int64 {
	var n int64
	for _, f := range m.Fragments {
		n += f.LiveRows()
	}
	return n
}

// DeletedRows is the number of rows masked by deletion vectors.
func (m *Manifest) DeletedRows() int64 {
	var n int64
	for _, f := range m.Fragments {
		n += f.DeletedRows
	}
	return n
}

// Bytes is the size of the data files.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.Fragments {
		n += f.Bytes
	}
	return n
}

// Fragments are kept sorted by ID (IDs are random, so a fragment's place says nothing about its
// age); Fragment finds one by binary search.

// Fragment returns the fragment with the given id.
func (m *Manifest) Fragment(id uint64) (Fragment, bool) {
	i, ok := slices.BinarySearchFunc(m.Fragments, id, func(f Fragment, id uint64) int {
		return compareUint(f.ID, id)
	})
	if !ok {
		return Fragment{}, false
	}
	return m.Fragments[i], true
}

// Covers reports whether the key index covers fragment id.
func (m *Manifest) Covers(id uint64) bool {
	if m.KeyIndex == nil {
		return false
	}
	_, ok := slices.BinarySearch(m.KeyIndex.Covered, id)
	return ok
}

// IndexCoversAll reports whether the key index covers every fragment.
func (m *Manifest) IndexCoversAll() bool {
	if m.KeyIndex == nil {
		return len(m.Fragments) == 0
	}
	for _, f := range m.Fragments {
		if !m.Covers(f.ID) {
			return false
		}
	}
	return true
}

// CoveredFragments is how many fragments the key index covers.
func (m *Manifest) CoveredFragments() int {
	n := 0
	for _, f := range m.Fragments {
		if m.Covers(f.ID) {
			n++
		}
	}
	return n
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// newFragmentID returns a random ID no fragment of m has. Random IDs let a writer that lost a
// commit race rebase its new fragments onto the winner's manifest without renumbering them.
func (m *Manifest) newFragmentID() uint64 {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := binary.LittleEndian.Uint64(b[:]) >> 1
		if _, taken := m.Fragment(id); !taken && id != 0 {
			return id
		}
	}
}

// addFragment inserts f keeping the ID order.
func (m *Manifest) addFragment(f Fragment) {
	i, _ := slices.BinarySearchFunc(m.Fragments, f.ID, func(x Fragment, id uint64) int { return compareUint(x.ID, id) })
	m.Fragments = slices.Insert(m.Fragments, i, f)
}

// removeFragment drops fragment id.
func (m *Manifest) removeFragment(id uint64) {
	m.Fragments = slices.DeleteFunc(m.Fragments, func(f Fragment) bool { return f.ID == id })
	if m.KeyIndex != nil {
		m.KeyIndex.Covered = slices.DeleteFunc(m.KeyIndex.Covered, func(c uint64) bool { return c == id })
	}
}

// replaceFragments removes the fragments sources and inserts added (what a compaction commits).
func (m *Manifest) replaceFragments(sources, added []Fragment) {
	for _, src := range sources {
		m.removeFragment(src.ID)
	}
	for _, f := range added {
		m.addFragment(f)
	}
}

// next returns a copy of m as the base of version m.Version+1.
func (m *Manifest) next(op string, now time.Time) *Manifest {
	n := *m
	n.Version = m.Version + 1
	n.CreatedAt = now.UTC()
	n.Operation = op
	n.Fields = slices.Clone(m.Fields)
	n.Fragments = slices.Clone(m.Fragments)
	if m.KeyIndex != nil {
		n.KeyIndex = &KeyIndex{Runs: slices.Clone(m.KeyIndex.Runs), Covered: slices.Clone(m.KeyIndex.Covered)}
	}
	n.WALWatermarks = make(map[string]uint64, len(m.WALWatermarks))
	for k, v := range m.WALWatermarks {
		n.WALWatermarks[k] = v
	}
	return &n
}

// setSchema replaces the schema (fields and decoded form).
func (m *Manifest) setSchema(s *arrow.Schema) error {
	fields, err := encodeSchema(s)
	if err != nil {
		return err
	}
	m.Fields, m.schema = fields, s
	return nil
}

func versionKey(v uint64) string { return fmt.Sprintf("%s%020d.json", versionsDir, v) }

func parseVersionKey(key string) (uint64, bool) {
	name, ok := strings.CutPrefix(key, versionsDir)
	if !ok {
		return 0, false
	}
	name, ok = strings.CutSuffix(name, ".json")
	if !ok || len(name) != 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(name, 10, 64)
	return v, err == nil
}

func decodeManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("table: corrupt manifest: %w", err)
	}
	if m.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("table: manifest format %d is not supported (want %d)", m.FormatVersion, FormatVersion)
	}
	s, err := decodeSchema(m.Fields)
	if err != nil {
		return nil, fmt.Errorf("table: manifest v%d: %w", m.Version, err)
	}
	m.schema = s
	if m.WALWatermarks == nil {
		m.WALWatermarks = map[string]uint64{}
	}
	return &m, nil
}

// readManifest loads version v.
func readManifest(ctx context.Context, store objstore.Store, v uint64) (*Manifest, error) {
	data, err := store.Get(ctx, versionKey(v))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, fmt.Errorf("%w: version %d", ErrNotFound, v)
	}
	if err != nil {
		return nil, err
	}
	m, err := decodeManifest(data)
	if err != nil {
		return nil, err
	}
	if m.Version != v {
		return nil, fmt.Errorf("table: manifest %s says version %d", versionKey(v), m.Version)
	}
	return m, nil
}

// latestVersion finds the newest committed version: start from the hint (or a listing when the
// hint is missing or bad) and probe forward until a version is missing. Versions are created in
// order (v+1 only after v exists), so the first gap ends the chain.
//
// known, when not 0, is the version this process found last: if it still exists the probe
// starts there and the hint is not read (a table handle's calls after its first), unless the
// table has moved on by more than a few versions since, when the hint is read after all.
func latestVersion(ctx context.Context, store objstore.Store, known uint64) (uint64, error) {
	exists := func(v uint64) (bool, error) {
		_, err := store.Stat(ctx, versionKey(v))
		if errors.Is(err, objstore.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	hinted := func() (uint64, error) {
		data, err := store.Get(ctx, latestHint)
		if errors.Is(err, objstore.ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		h, perr := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
		if perr != nil {
			return 0, nil
		}
		if ok, err := exists(h); !ok {
			return 0, err
		}
		return h, nil
	}
	var v uint64
	if known > 0 {
		ok, err := exists(known)
		if err != nil {
			return 0, err
		}
		if ok {
			v = known
		}
	}
	readHint := v == 0
	if readHint {
		h, err := hinted()
		if err != nil {
			return 0, err
		}
		v = h
	}
	if v == 0 {
		objs, err := objstore.ListAll(ctx, store, versionsDir)
		if err != nil {
			return 0, err
		}
		for _, o := range objs {
			if n, ok := parseVersionKey(o.Key); ok && n > v {
				v = n
			}
		}
		if v == 0 {
			return 0, ErrNotFound
		}
	}
	for steps := 1; ; steps++ {
		ok, err := exists(v + 1)
		if err != nil {
			return 0, err
		}
		if !ok {
			return v, nil
		}
		v++
		if steps == 8 && !readHint {
			readHint = true
			h, err := hinted()
			if err != nil {
				return 0, err
			}
			v = max(v, h)
		}
	}
}

// commitManifest creates version m.Version. ErrExists means another writer committed it first.
func commitManifest(ctx context.Context, store objstore.Store, m *Manifest) error {
	m.FormatVersion = FormatVersion
	data, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := store.PutIfAbsent(ctx, versionKey(m.Version), data); err != nil {
		return err
	}
	// The hint only speeds up finding the latest version; losing it costs a listing.
	_ = store.Put(ctx, latestHint, []byte(strconv.FormatUint(m.Version, 10)))
	return nil
}

// IsRewrittenKey reports whether key (under any prefix) is the one table object rewritten in
// place, the latest-version hint: caches of immutable objects must not keep it.
func IsRewrittenKey(key string) bool {
	return key == latestHint || strings.HasSuffix(key, "/"+latestHint)
}
