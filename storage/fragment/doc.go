// Package fragment is the table's data file format: one immutable Parquet file of rows sorted by
// key, written a row group at a time (Writer) with a page index, and read back whole, by row
// groups, or a few rows at a time from the pages holding them (Reader). docs/format/table.md
// ("Fragment layout") specifies the layout.
//
// The package knows nothing of versions, manifests, deletion vectors or the key index: a table
// names a fragment by a Ref (its path and size) and reads it through a Reader value holding the
// object store, the table's cache namespace and the allocator. Every file this package opens is
// immutable, so what it caches (footers, offset indexes, page locations, dictionaries) is keyed
// by path and never invalidated.
package fragment
