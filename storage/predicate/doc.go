// Package predicate is the row filter of scans: a SQL WHERE predicate over a store's columns
// (comparisons, AND/OR/NOT, IN, BETWEEN, IS [NOT] NULL, [NOT] LIKE), parsed against the store's
// Arrow schema (parse.go), evaluated a column at a time over Arrow batches with SQL's
// three-valued logic (eval.go), and judged against a row group's column statistics so scans skip
// groups no row of which can match (prune.go). It knows nothing of HTTP or of the table format:
// storage/table hands it statistics, storage/lsm batches.
package predicate
