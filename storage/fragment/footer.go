// A fragment's decoded Parquet footer: where each row group starts, the leaf columns of each
// top-level column, and what the chunk statistics say about nulls.
package fragment

import (
	"maps"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Footer is a fragment's decoded Parquet footer, where each row group starts, and the leaf
// column of each top-level flat column.
type Footer struct {
	md         *metadata.FileMetaData
	rowStarts  []int64          // row group i holds rows rowStarts[i] .. rowStarts[i+1]-1
	flatLeaves map[string]int   // column name -> leaf index, for leaves whose path is one name
	topLeaves  map[string][]int // top-level column name -> its leaf indices
}

func newFooter(md *metadata.FileMetaData) *Footer {
	starts := make([]int64, md.NumRowGroups()+1)
	for i, rg := range md.GetRowGroups() {
		starts[i+1] = starts[i] + rg.GetNumRows()
	}
	leaves, top := map[string]int{}, map[string][]int{}
	for i := range md.Schema.NumColumns() {
		path := md.Schema.Column(i).ColumnPath()
		if len(path) == 1 {
			leaves[path[0]] = i
		}
		if len(path) > 0 {
			top[path[0]] = append(top[path[0]], i)
		}
	}
	return &Footer{md: md, rowStarts: starts, flatLeaves: leaves, topLeaves: top}
}

// NullEverywhere reports whether column name is null in every row of the fragment: the fragment
// does not store it, or it is a flat column whose chunk statistics count a null in every row of
// every row group (false when they do not say).
func (f *Footer) NullEverywhere(name string) bool {
	if _, stored := f.topLeaves[name]; !stored {
		return true
	}
	leaf, flat := f.flatLeaves[name]
	if !flat {
		return false
	}
	for rg := range f.md.NumRowGroups() {
		meta := f.md.RowGroup(rg)
		if cc, stats := leafStats(meta, leaf); !nullInEveryRow(meta, cc, stats) {
			return false
		}
	}
	return true
}

// Metadata is the decoded Parquet footer (shared: read it, never change it).
func (f *Footer) Metadata() *metadata.FileMetaData { return f.md }

// Columns is the names of the top-level columns the fragment stores, sorted.
func (f *Footer) Columns() []string { return slices.Sorted(maps.Keys(f.topLeaves)) }

// RowGroups is how many row groups the fragment has.
func (f *Footer) RowGroups() int { return len(f.rowStarts) - 1 }

// Rows is how many rows the fragment has.
func (f *Footer) Rows() int64 { return f.rowStarts[len(f.rowStarts)-1] }

// RowGroupStart is the fragment row of row group rg's first row (rg == RowGroups(): Rows()).
func (f *Footer) RowGroupStart(rg int) int64 { return f.rowStarts[rg] }

// RowsIn is how many rows row group rg has.
func (f *Footer) RowsIn(rg int) int64 { return f.rowStarts[rg+1] - f.rowStarts[rg] }

// UncompressedBytes is the size of the fragment's values before encoding, by its footer (which
// understates dictionary-encoded columns).
func (f *Footer) UncompressedBytes() int64 {
	var n int64
	for i := range f.md.NumRowGroups() {
		n += f.md.RowGroup(i).TotalByteSize()
	}
	return n
}

// RowGroupOf maps a row of the fragment to its row group and the row's offset in it (-1 when the
// fragment has no such row).
func (f *Footer) RowGroupOf(row int64) (int, int64) {
	if row < 0 || row >= f.rowStarts[len(f.rowStarts)-1] {
		return -1, 0
	}
	rg := sort.Search(len(f.rowStarts)-1, func(i int) bool { return f.rowStarts[i+1] > row })
	return rg, row - f.rowStarts[rg]
}

// releaseArrays releases the arrays of arrs (nil entries: none yet).
func releaseArrays(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// storedColumns is names without the columns that are null in every row of the row groups (a
// sparse schema's unused columns): there is nothing to decode, and layoutColumns fills in any
// column it does not get with nulls.
func storedColumns(fr *pqarrow.FileReader, names []string, rowGroups []int) []string {
	read := make([]string, 0, len(names))
	for _, name := range names {
		stored := false
		for _, rg := range rowGroups {
			if !allNullInRowGroup(fr, name, rg) {
				stored = true
				break
			}
		}
		if stored || len(rowGroups) == 0 {
			read = append(read, name)
		}
	}
	return read
}

// allNullInRowGroup reports, from its column chunk statistics, whether top-level column name is
// null in every row of row group rg. Only a nullable column with a single, unnested leaf
// qualifies: there a null leaf value is a null row (in a list or struct it may be an empty list
// or a null child).
func allNullInRowGroup(fr *pqarrow.FileReader, name string, rg int) bool {
	for _, sf := range fr.Manifest.Fields {
		if sf.Field.Name != name {
			continue
		}
		if !sf.Field.Nullable || len(sf.Children) != 0 || sf.ColIndex < 0 {
			return false
		}
		meta := fr.ParquetReader().MetaData().RowGroup(rg)
		cc, stats := leafStats(meta, sf.ColIndex)
		return nullInEveryRow(meta, cc, stats)
	}
	return false
}

// leafStats returns leaf column leaf's chunk in a row group and its statistics (nil when the
// chunk has none or they cannot be read).
func leafStats(meta *metadata.RowGroupMetaData, leaf int) (*metadata.ColumnChunkMetaData, metadata.TypedStatistics) {
	cc, err := meta.ColumnChunk(leaf)
	if err != nil {
		return nil, nil
	}
	if set, err := cc.StatsSet(); err != nil || !set {
		return cc, nil
	}
	stats, err := cc.Statistics()
	if err != nil {
		return cc, nil
	}
	return cc, stats
}

// nullInEveryRow reports, from a chunk's statistics, whether it holds one null entry per row of
// its row group (false when unknown).
func nullInEveryRow(meta *metadata.RowGroupMetaData, cc *metadata.ColumnChunkMetaData, stats metadata.TypedStatistics) bool {
	return stats != nil && stats.HasNullCount() && stats.NullCount() == meta.NumRows() && cc.NumValues() == meta.NumRows()
}
