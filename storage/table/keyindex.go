// The exact key index: key -> (fragment, row, _seq, tombstone) for every row of the fragments it
// covers. It is a list of immutable runs (index/<random>.kix), each a sorted run split into
// small pages with a footer holding the first key of every page and a Bloom filter of its keys.
// A lookup consults runs newest first: the Bloom filter rules most runs out without I/O,
// the page directory (cached per run) names the one page to read. Entries are validated
// against the manifest being read — an entry whose fragment is gone (compacted away) or whose row
// is deleted is stale and skipped — so runs never need rewriting when rows are replaced.
//
// Segment layout (docs/format/table.md): pages, footer, u32 LE footer length, magic "STRKIX01".
package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sync/errgroup"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/bits-and-blooms/bloom/v3"

	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/objstore"
)

const (
	indexMagic     = "STRKIX01"
	entriesPerPage = 64
	bloomFalsePos  = 0.01
	runTailSize    = 4 + len(indexMagic)
	// tierRatio: a new run is merged into the previous one while it holds at least 1/tierRatio
	// as many entries, which keeps the run count logarithmic in the table size.
	tierRatio = 4
)

// indexEntry locates the row holding a key.
type indexEntry struct {
	Key       string
	Fragment  uint64
	Row       int64
	Seq       uint64
	Tombstone bool
}

// pageRef locates one page of a run and names its first key.
type pageRef struct {
	offset, length int64
	firstKey       string
}

// pageDirectory is a run's pages in key order, held column-wise: every first key in one string,
// so a cached footer is a handful of allocations rather than one per page (a table's footers are
// most of what the object cache holds for it).
type pageDirectory struct {
	offsets, lengths []int64
	keyEnds          []int  // page i's first key is keys[keyEnds[i-1]:keyEnds[i]] (from 0 for page 0)
	keys             string // the first keys, concatenated
	building         []byte // add's keys until the directory is read (done)
}

func (d *pageDirectory) len() int { return len(d.offsets) }

func (d *pageDirectory) firstKey(i int) string {
	start := 0
	if i > 0 {
		start = d.keyEnds[i-1]
	}
	return d.keys[start:d.keyEnds[i]]
}

func (d *pageDirectory) at(i int) pageRef {
	return pageRef{offset: d.offsets[i], length: d.lengths[i], firstKey: d.firstKey(i)}
}

// refs is pages i to j-1.
func (d *pageDirectory) refs(i, j int) []pageRef {
	out := make([]pageRef, 0, j-i)
	for ; i < j; i++ {
		out = append(out, d.at(i))
	}
	return out
}

// add appends a page; done ends the additions.
func (d *pageDirectory) add(p pageRef) {
	d.offsets, d.lengths = append(d.offsets, p.offset), append(d.lengths, p.length)
	d.building = append(d.building, p.firstKey...)
	d.keyEnds = append(d.keyEnds, len(d.building))
}

func (d *pageDirectory) done() {
	d.keys, d.building = string(d.building), nil
}

// span is the bytes the directory's pages take in their run.
func (d *pageDirectory) span() int64 {
	if d.len() == 0 {
		return 0
	}
	last := d.len() - 1
	return d.offsets[last] + d.lengths[last] - d.offsets[0]
}

// bytes is the memory the directory holds.
func (d *pageDirectory) bytes() int64 {
	return int64(cap(d.offsets)+cap(d.lengths)+cap(d.keyEnds))*8 + int64(len(d.keys))
}

type runFooter struct {
	entries int64
	pages   pageDirectory
	lastKey string
	bloom   *bloom.BloomFilter
}

// encodeSegment serialises entries (sorted by key, one per key).
func encodeSegment(entries []indexEntry) []byte {
	var buf bytes.Buffer
	w := newSegmentWriter(&buf, len(entries))
	for _, e := range entries {
		w.add(e)
	}
	w.finish()
	return buf.Bytes()
}

// segmentWriter encodes a run entry by entry (sorted by key, one per key) into out, a page at a
// time: a merge of runs streams into one without holding their entries, and, when out writes
// through to the run's object (objstore.Sink), without holding the run either — only the page
// being encoded and the footer (page directory and Bloom filter) that ends the run.
type segmentWriter struct {
	out     io.Writer // never fails: a sink keeps its first error (objectSink.failed)
	off     int64     // bytes written to out
	pageBuf bytes.Buffer
	pages   pageDirectory
	bloom   *bloom.BloomFilter
	page    []indexEntry // the page being filled
	n       int
	last    string
	tmp     [binary.MaxVarintLen64]byte
}

// newSegmentWriter starts a run of at most about estimate entries written into out (the Bloom
// filter's size: more entries than that raise its false-positive rate; with fewer, finish folds
// the filter down to what they need, runbloom.go).
func newSegmentWriter(out io.Writer, estimate int) *segmentWriter {
	return &segmentWriter{out: out, bloom: newRunBloom(estimate), page: make([]indexEntry, 0, entriesPerPage)}
}

func (w *segmentWriter) putUvarint(b *bytes.Buffer, v uint64) {
	b.Write(w.tmp[:binary.PutUvarint(w.tmp[:], v)])
}
func (w *segmentWriter) putString(b *bytes.Buffer, s string) {
	w.putUvarint(b, uint64(len(s)))
	b.WriteString(s)
}

// write hands b to out.
func (w *segmentWriter) write(b []byte) {
	_, _ = w.out.Write(b)
	w.off += int64(len(b))
}

func (w *segmentWriter) add(e indexEntry) {
	w.page = append(w.page, e)
	w.bloom.AddString(e.Key)
	w.n++
	w.last = e.Key
	if len(w.page) == entriesPerPage {
		w.flushPage()
	}
}

func (w *segmentWriter) flushPage() {
	if len(w.page) == 0 {
		return
	}
	b := &w.pageBuf
	b.Reset()
	w.putUvarint(b, uint64(len(w.page)))
	for _, e := range w.page {
		w.putString(b, e.Key)
		w.putUvarint(b, e.Fragment)
		w.putUvarint(b, uint64(e.Row))
		w.putUvarint(b, e.Seq)
		if e.Tombstone {
			b.WriteByte(1)
		} else {
			b.WriteByte(0)
		}
	}
	w.pages.add(pageRef{offset: w.off, length: int64(b.Len()), firstKey: w.page[0].Key})
	w.write(b.Bytes())
	w.page = w.page[:0]
}

// entries is how many entries were added.
func (w *segmentWriter) entries() int { return w.n }

// size is the bytes written so far (the run's size once finished).
func (w *segmentWriter) size() int64 { return w.off }

// finish writes the last page, the footer and the tail.
func (w *segmentWriter) finish() {
	w.flushPage()
	var footer bytes.Buffer
	w.putUvarint(&footer, uint64(w.n))
	w.pages.done()
	w.putUvarint(&footer, uint64(w.pages.len()))
	for i := range w.pages.len() {
		p := w.pages.at(i)
		w.putUvarint(&footer, uint64(p.offset))
		w.putUvarint(&footer, uint64(p.length))
		w.putString(&footer, p.firstKey)
	}
	w.putString(&footer, w.last)
	w.bloom = fitBloom(w.bloom, w.n)
	bloomBytes, _ := w.bloom.MarshalBinary()
	w.putUvarint(&footer, uint64(len(bloomBytes)))
	footer.Write(bloomBytes)
	_ = binary.Write(&footer, binary.LittleEndian, uint32(footer.Len()))
	footer.WriteString(indexMagic)
	w.write(footer.Bytes())
}

var errCorruptIndex = errors.New("table: corrupt key index run")

type byteReader struct {
	b   []byte
	err error
}

func (r *byteReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCorruptIndex
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *byteReader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(len(r.b)) < n {
		r.err = errCorruptIndex
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *byteReader) string() string { return string(r.bytes(r.uvarint())) }

func decodeFooter(data []byte) (*runFooter, error) {
	r := &byteReader{b: data}
	f := &runFooter{entries: int64(r.uvarint())}
	n := r.uvarint()
	if r.err == nil && n > uint64(len(data)) {
		return nil, errCorruptIndex
	}
	f.pages.offsets, f.pages.lengths, f.pages.keyEnds = make([]int64, 0, n), make([]int64, 0, n), make([]int, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		offset, length := int64(r.uvarint()), int64(r.uvarint())
		f.pages.add(pageRef{offset: offset, length: length, firstKey: string(r.bytes(r.uvarint()))})
	}
	f.pages.done()
	f.lastKey = r.string()
	bloomBytes := r.bytes(r.uvarint())
	if r.err != nil {
		return nil, r.err
	}
	bf, err := decodeBloom(bloomBytes)
	if err != nil {
		return nil, err
	}
	f.bloom = bf
	return f, nil
}

// bytes is the memory a decoded footer holds, for the object cache: its page directory with the
// pages' first keys, and the Bloom filter's words. Twice the encoded size was half again too
// much (the Bloom filter, most of a footer, decodes to its encoded size), and the memory
// governor lets the heap grow by what the cache says it holds.
func (f *runFooter) bytes() int64 {
	n := int64(unsafe.Sizeof(*f)) + int64(len(f.lastKey)) + f.pages.bytes()
	if f.bloom != nil {
		n += 64 + int64(f.bloom.Cap()+63)/64*8
	}
	return n
}

// decodeBloom checks the shape of a serialised Bloom filter (m, k, bit count, then the 64-bit
// words, all big-endian) before handing it to the library, which trusts its input's lengths.
func decodeBloom(data []byte) (*bloom.BloomFilter, error) {
	if len(data) < 24 {
		return nil, fmt.Errorf("%w: bloom filter too short", errCorruptIndex)
	}
	m := binary.BigEndian.Uint64(data[0:8])
	k := binary.BigEndian.Uint64(data[8:16])
	bits := binary.BigEndian.Uint64(data[16:24])
	words := (bits + 63) / 64
	if m != bits || k == 0 || k > 64 || words > uint64(len(data)-24)/8 || uint64(len(data)-24) != words*8 {
		return nil, fmt.Errorf("%w: bloom filter header", errCorruptIndex)
	}
	bf := &bloom.BloomFilter{}
	if err := bf.UnmarshalBinary(data); err != nil {
		return nil, fmt.Errorf("%w: bloom filter: %v", errCorruptIndex, err)
	}
	return bf, nil
}

// writeRun stores entries as a new run.
func (t *Table) writeRun(ctx context.Context, entries []indexEntry) (IndexRun, error) {
	return t.putRun(ctx, encodeSegment(entries), len(entries))
}

// runPath is where a new run is stored.
func runPath() string { return indexDir + randomName() + ".kix" }

// putRun stores an encoded run of n entries.
func (t *Table) putRun(ctx context.Context, data []byte, n int) (IndexRun, error) {
	path := runPath()
	if err := t.store.PutIfAbsent(ctx, path, data); err != nil {
		return IndexRun{}, fmt.Errorf("table: write key index run: %w", err)
	}
	return IndexRun{Path: path, Entries: int64(n), Bytes: int64(len(data))}, nil
}

// runTailRead is how much of a run's end the first read of its footer fetches on a store that
// does not write in place (an object store, where each request is a round trip): a footer that
// fits comes with its length in one read.
const runTailRead = 64 << 10

// footer loads (and caches) a run's footer: one ranged read of the run's end, and a second when
// the footer does not fit in it; once per handle.
func (t *Table) footer(ctx context.Context, seg IndexRun) (*runFooter, error) {
	if f, ok := cache.Get[*runFooter](t.cache, "index", seg.Path); ok {
		return f, nil
	}
	if seg.Bytes < int64(runTailSize) {
		return nil, fmt.Errorf("%w: %s is %d bytes", errCorruptIndex, seg.Path, seg.Bytes)
	}
	n := int64(runTailSize)
	if !objstore.WritesInPlace(t.store) {
		n = min(seg.Bytes, runTailRead)
	}
	end, err := t.store.GetRange(ctx, seg.Path, seg.Bytes-n, n)
	if err != nil {
		return nil, fmt.Errorf("table: read key index %s: %w", seg.Path, err)
	}
	if int64(len(end)) != n {
		return nil, fmt.Errorf("%w: %s is shorter than its manifest says", errCorruptIndex, seg.Path)
	}
	tail := end[n-int64(runTailSize):]
	if string(tail[4:]) != indexMagic {
		return nil, fmt.Errorf("%w: %s has no magic", errCorruptIndex, seg.Path)
	}
	flen := int64(binary.LittleEndian.Uint32(tail[:4]))
	if flen > seg.Bytes-int64(runTailSize) {
		return nil, fmt.Errorf("%w: %s footer length", errCorruptIndex, seg.Path)
	}
	var data []byte
	if flen+int64(runTailSize) <= n {
		data = bytes.Clone(end[n-int64(runTailSize)-flen : n-int64(runTailSize)])
	} else if data, err = t.store.GetRange(ctx, seg.Path, seg.Bytes-int64(runTailSize)-flen, flen); err != nil {
		return nil, fmt.Errorf("table: read key index %s: %w", seg.Path, err)
	}
	f, err := decodeFooter(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, seg.Path)
	}
	cache.Add(t.cache, "index", seg.Path, f, f.bytes())
	return f, nil
}

// readPage reads one page of a run. keep says whether a page read from storage enters the cache.
func (t *Table) readPage(ctx context.Context, seg IndexRun, p pageRef, keep bool) (*indexPage, error) {
	// Decoded pages are cached (runs never change): point lookups of hot keys, and of a store
	// whose index fits the cache, read no index bytes at all. Bulk lookups (a merge's keys, spread
	// over many pages, each read once) pass keep=false: caching them would fill the cache with
	// pages nobody reads again and push out the ones point reads and scans come back to.
	key := pageKey(seg, p)
	if page, ok := cache.Get[*indexPage](t.cache, "index_page", key); ok {
		return page, nil
	}
	data, err := t.store.GetRange(ctx, seg.Path, p.offset, p.length)
	if err != nil {
		return nil, fmt.Errorf("table: read key index %s: %w", seg.Path, err)
	}
	page, err := decodePage(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, seg.Path)
	}
	if keep {
		cache.Add(t.cache, "index_page", key, page, page.cost())
	}
	return page, nil
}

func pageKey(seg IndexRun, p pageRef) string { return seg.Path + "#" + strconv.FormatInt(p.offset, 10) }

// cachedPage is page p of run seg when the cache holds it decoded.
func (t *Table) cachedPage(seg IndexRun, p pageRef) (*indexPage, bool) {
	return cache.Get[*indexPage](t.cache, "index_page", pageKey(seg, p))
}

// readPageRun reads contiguous pages of run seg in one range read, decodes and caches each.
func (t *Table) readPageRun(ctx context.Context, seg IndexRun, pages []pageRef) ([]*indexPage, error) {
	return t.readPageRange(ctx, seg, pages, true)
}

// readPageRange reads pages of run seg, in offset order, in one range read from the first to the
// end of the last (what lies between them is read and dropped), decodes each and, when keep,
// caches it.
func (t *Table) readPageRange(ctx context.Context, seg IndexRun, pages []pageRef, keep bool) ([]*indexPage, error) {
	first, last := pages[0], pages[len(pages)-1]
	length := last.offset + last.length - first.offset
	data, err := t.store.GetRange(ctx, seg.Path, first.offset, length)
	if err != nil {
		return nil, fmt.Errorf("table: read key index %s: %w", seg.Path, err)
	}
	if int64(len(data)) != length {
		return nil, fmt.Errorf("%w: %s: a %d-byte range read %d bytes", errCorruptIndex, seg.Path, length, len(data))
	}
	out := make([]*indexPage, len(pages))
	for i, p := range pages {
		at := p.offset - first.offset
		page, err := decodePage(data[at : at+p.length])
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, seg.Path)
		}
		if keep {
			cache.Add(t.cache, "index_page", pageKey(seg, p), page, page.cost())
		}
		out[i] = page
	}
	return out, nil
}

// liveness answers "is this index entry current in manifest m" using m's deletion vectors. It
// holds each fragment's vector once read: a run merge asks about every entry it passes, and the
// object cache's lookup (a lock, a key built per call, a metric) costs more than the answer.
// One liveness serves one goroutine.
type liveness struct {
	t       *Table
	m       *Manifest
	deleted map[uint64]*roaring.Bitmap // fragment id -> its deletion vector; made on first use
}

func newLiveness(t *Table, m *Manifest) *liveness { return &liveness{t: t, m: m} }

func (l *liveness) live(ctx context.Context, e indexEntry) (bool, error) {
	f, ok := l.m.Fragment(e.Fragment)
	if !ok || e.Row >= f.Rows {
		return false, nil
	}
	if f.DeletedRows == 0 {
		return true, nil
	}
	del, ok := l.deleted[f.ID]
	if !ok {
		var err error
		if del, err = l.t.deletions(ctx, f); err != nil {
			return false, err
		}
		if l.deleted == nil {
			l.deleted = map[uint64]*roaring.Bitmap{}
		}
		l.deleted[f.ID] = del
	}
	return !del.Contains(uint32(e.Row)), nil
}

// indexLookup resolves sorted, distinct keys through m's key index. The result holds the live
// entry of every key the index knows; keys absent from it are simply missing from the map.
func (t *Table) indexLookup(ctx context.Context, m *Manifest, keys []string) (map[string]indexEntry, error) {
	found := make(map[string]indexEntry, len(keys))
	if m.KeyIndex == nil {
		return found, nil
	}
	lv := newLiveness(t, m)
	for si := len(m.KeyIndex.Runs) - 1; si >= 0; si-- {
		seg := m.KeyIndex.Runs[si]
		f, err := t.footer(ctx, seg)
		if err != nil {
			return nil, err
		}
		// Group the still-unresolved keys that may be in this run by page.
		byPage := map[int][]string{}
		for _, k := range keys {
			if _, done := found[k]; done || f.pages.len() == 0 || k < f.pages.firstKey(0) || k > f.lastKey || !f.bloom.TestString(k) {
				continue
			}
			p := sort.Search(f.pages.len(), func(i int) bool { return f.pages.firstKey(i) > k }) - 1
			byPage[p] = append(byPage[p], k)
		}
		pages, err := t.readPages(ctx, seg, f, byPage)
		if err != nil {
			return nil, err
		}
		var matched []indexEntry
		for p, pageKeys := range byPage {
			page := pages[p]
			for _, k := range pageKeys {
				if e, ok := page.find(k); ok {
					matched = append(matched, e)
				}
			}
		}
		if err := t.prefetchDeletions(ctx, m, matched); err != nil {
			return nil, err
		}
		for _, e := range matched {
			live, err := lv.live(ctx, e)
			if err != nil {
				return nil, err
			}
			if live {
				found[e.Key] = e
			}
		}
	}
	return found, nil
}

// lookupConcurrency bounds the index reads and deletion vectors one lookup has in flight at
// once: on an object store each is a round trip.
const lookupConcurrency = 32

// A bulk lookup's pages of one run are read in coalesced ranges: pages in key order, a range
// extended over a gap of at most coalesceGap bytes (pages nobody asked for, read and dropped)
// up to coalesceMax bytes. A merge of n keys then sends at most one request per page it needs,
// and far fewer where its pages lie close together, and reads at most coalesceGap bytes more per
// page it needs: requests and bytes both grow with the keys merged, never with the table. On
// the test S3 server (P10, docs/benchmarks.md) a 1,000-row merge into a 500k-row table sent 377
// requests without coalescing, 82 with 64 KiB gaps and 2 MiB ranges, 27 with these. On a store
// that writes in place (a local or shared disk) a request costs no round trip: there only
// adjacent pages share a read, and no byte is read that is not needed.
const (
	coalesceGap = 128 << 10
	coalesceMax = 4 << 20
)

// coalesceGapFor is the gap a range may span on t's store (see coalesceGap).
func (t *Table) coalesceGapFor() int64 {
	if objstore.WritesInPlace(t.store) {
		return 0
	}
	return coalesceGap
}

// pageRange is one coalesced read: pages want[i] (indexes into the run's page directory, in
// order) lie inside [offset, offset+length).
type pageRange struct {
	offset, length int64
	want           []int
}

// coalesce groups sorted page indexes of directory d into ranges spanning gaps of at most gap
// bytes (see coalesceGap).
func coalesce(d *pageDirectory, pages []int, gap int64) []pageRange {
	var out []pageRange
	for _, p := range pages {
		ref := d.at(p)
		if n := len(out); n > 0 {
			r := &out[n-1]
			end := r.offset + r.length
			if ref.offset-end <= gap && ref.offset+ref.length-r.offset <= coalesceMax {
				r.length = ref.offset + ref.length - r.offset
				r.want = append(r.want, p)
				continue
			}
		}
		out = append(out, pageRange{offset: ref.offset, length: ref.length, want: []int{p}})
	}
	return out
}

// keepBulkPages reports whether pages a bulk lookup reads from a run of runBytes page bytes
// stay in the cache: when the whole run, decoded (about decodedPageFactor times its encoded
// size), would take at most an eighth of it. A hot store's index then stays resident, so its
// next merges read no index bytes, while a run too large to keep cannot push out what point
// reads and scans come back to.
func (t *Table) keepBulkPages(runBytes int64) bool {
	return runBytes > 0 && runBytes*decodedPageFactor <= t.cache.Limit()/8
}

// pointReadahead is the block of a run a point lookup's page miss reads on an object store when
// the run's pages may stay in the cache (keepPointPages): the pages of the aligned block holding
// the page, in the one request the page costs anyway. A hot store's index becomes resident after
// a few hundred gets instead of one get per page, so a warm get costs one request (its row's
// data page), not two.
const pointReadahead = 256 << 10

// readPointPage returns page p of run seg (footer f) for a point lookup: from the cache, else
// read alone, or with its block's neighbours (see pointReadahead), and cached.
func (t *Table) readPointPage(ctx context.Context, seg IndexRun, f *runFooter, p int) (*indexPage, error) {
	ref := f.pages.at(p)
	if page, ok := t.cachedPage(seg, ref); ok {
		return page, nil
	}
	if objstore.WritesInPlace(t.store) || !t.keepPointPages(f.pages.span()) {
		return t.readPage(ctx, seg, ref, true)
	}
	blockStart := ref.offset - ref.offset%pointReadahead
	blockEnd := blockStart + pointReadahead
	first, last := p, p
	for first > 0 && f.pages.at(first-1).offset >= blockStart {
		first--
	}
	for last+1 < f.pages.len() {
		next := f.pages.at(last + 1)
		if next.offset+next.length > blockEnd {
			break
		}
		last++
	}
	pages, err := t.readPageRange(ctx, seg, f.pages.refs(first, last+1), true)
	if err != nil {
		return nil, err
	}
	return pages[p-first], nil
}

// keepPointPages reports whether a point lookup may read ahead in a run of runBytes page bytes
// (readPointPage): when the whole run, decoded, would take at most a quarter of the cache. Point
// lookups come back to a hot store's index on every get, so it may take more of the cache than a
// merge's bulk lookups may (keepBulkPages); a store's index is still bounded, and the cache's LRU
// gives it back when the store cools.
func (t *Table) keepPointPages(runBytes int64) bool {
	return runBytes > 0 && runBytes*decodedPageFactor <= t.cache.Limit()/4
}

// decodedPageFactor is about how much larger a decoded page is than its encoding.
const decodedPageFactor = 3

// readPages returns the pages of run seg (footer f) that byPage names: those the cache holds,
// and the rest read in coalesced ranges, concurrently.
func (t *Table) readPages(ctx context.Context, seg IndexRun, f *runFooter, byPage map[int][]string) (map[int]*indexPage, error) {
	out := make(map[int]*indexPage, len(byPage))
	if len(byPage) == 1 { // one page (a point lookup): read it here, no goroutine hand-off, and cache it
		for p := range byPage {
			page, err := t.readPointPage(ctx, seg, f, p)
			if err != nil {
				return nil, err
			}
			out[p] = page
		}
		return out, nil
	}
	missing := make([]int, 0, len(byPage))
	for p := range byPage {
		if page, ok := t.cachedPage(seg, f.pages.at(p)); ok {
			out[p] = page
		} else {
			missing = append(missing, p)
		}
	}
	sort.Ints(missing)
	keep := t.keepBulkPages(f.pages.span())
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(lookupConcurrency)
	for _, r := range coalesce(&f.pages, missing, t.coalesceGapFor()) {
		g.Go(func() error {
			refs := make([]pageRef, len(r.want))
			for i, p := range r.want {
				refs[i] = f.pages.at(p)
			}
			pages, err := t.readPageRange(gctx, seg, refs, keep)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for i, p := range r.want {
				out[p] = pages[i]
			}
			return nil
		})
	}
	return out, g.Wait()
}

// prefetchDeletions loads (into the cache) the deletion vectors of the fragments entries point
// into, concurrently, so the liveness checks that follow read none one by one.
func (t *Table) prefetchDeletions(ctx context.Context, m *Manifest, entries []indexEntry) error {
	need := map[uint64]Fragment{}
	for _, e := range entries {
		if f, ok := m.Fragment(e.Fragment); ok && f.DeletionFile != "" {
			need[f.ID] = f
		}
	}
	if len(need) < 2 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(lookupConcurrency)
	for _, f := range need {
		g.Go(func() error {
			_, err := t.deletions(gctx, f)
			return err
		})
	}
	return g.Wait()
}
