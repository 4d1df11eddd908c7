// A decoded key-index page as the cache holds it: its keys in one string and its entries without
// pointers, so a cache full of pages is three objects per page for the garbage collector (not one
// string per key to mark and a slice of pointers to scan on every cycle).
package table

import (
	"cmp"
	"sort"
	"unsafe"
)

// indexPage is one decoded page of a run, in key order. The keys it hands out are substrings of
// p.keys: an entry kept after the page is dropped keeps the page's key bytes (a few KiB) alive.
type indexPage struct {
	keys    string
	entries []pageEntry
	size    int64 // the memory it holds (for the cache)
}

// pageEntry is an indexEntry whose key is keys[previous entry's keyEnd : keyEnd].
type pageEntry struct {
	keyEnd    uint32
	tombstone bool
	fragment  uint64
	row       int64
	seq       uint64
}

func (p *indexPage) len() int { return len(p.entries) }

func (p *indexPage) key(i int) string {
	start := uint32(0)
	if i > 0 {
		start = p.entries[i-1].keyEnd
	}
	return p.keys[start:p.entries[i].keyEnd]
}

// at is entry i.
func (p *indexPage) at(i int) indexEntry {
	e := &p.entries[i]
	return indexEntry{Key: p.key(i), Fragment: e.fragment, Row: e.row, Seq: e.seq, Tombstone: e.tombstone}
}

// find is the entry of key k.
func (p *indexPage) find(k string) (indexEntry, bool) {
	i := sort.Search(p.len(), func(i int) bool { return cmp.Compare(p.key(i), k) >= 0 })
	if i < p.len() && p.key(i) == k {
		return p.at(i), true
	}
	return indexEntry{}, false
}

// cost is the page's memory, for the cache.
func (p *indexPage) cost() int64 { return p.size }

// decodePage decodes one page (count, then per entry: key, fragment, row, seq, tombstone byte).
func decodePage(data []byte) (*indexPage, error) {
	r := &byteReader{b: data}
	n := r.uvarint()
	if r.err == nil && n > uint64(len(data)) {
		return nil, errCorruptIndex
	}
	if len(data) > 1<<32-1 {
		return nil, errCorruptIndex // key ends are 32-bit
	}
	entries := make([]pageEntry, 0, n)
	keys := make([]byte, 0, len(data))
	for i := uint64(0); i < n && r.err == nil; i++ {
		keys = append(keys, r.bytes(r.uvarint())...)
		e := pageEntry{keyEnd: uint32(len(keys)), fragment: r.uvarint(), row: int64(r.uvarint()), seq: r.uvarint()}
		flag := r.bytes(1)
		if r.err == nil {
			e.tombstone = flag[0] == 1
		}
		entries = append(entries, e)
	}
	if r.err != nil {
		return nil, r.err
	}
	// keys is this page's own buffer, never written again: it becomes the string without a copy.
	page := &indexPage{keys: unsafe.String(unsafe.SliceData(keys), len(keys)), entries: entries}
	page.size = int64(unsafe.Sizeof(*page)) + int64(cap(keys)) + int64(cap(entries))*int64(unsafe.Sizeof(pageEntry{}))
	return page, nil
}
