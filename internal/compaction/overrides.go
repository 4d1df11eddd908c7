// Package compaction holds what a maintenance request may change about one compaction: a leaf
// both the workflow inputs (which touch no storage) and the table's compaction config import, so
// a request is applied to a config in one place (table.CompactionConfig.With).
package compaction

// Overrides are a compact request's changes to the worker's compaction config (zero: keep it).
// Their JSON members are the maintenance request's own.
type Overrides struct {
	// TargetRowsPerFragment overrides the compaction target; 0 keeps the worker's.
	TargetRowsPerFragment int64 `json:"target_rows_per_fragment,omitempty"`
	// KeepDeletions: never rewrite a fragment for its deleted rows alone.
	KeepDeletions bool `json:"keep_deletions,omitempty"`
	// MinFragments overrides how many small fragments make a compaction worthwhile (the API's
	// compact route asks for 2); 0 keeps the worker's.
	MinFragments int `json:"min_fragments,omitempty"`
	// EverySmallFragment: rewrite every small fragment together, not one size tier (the API's
	// compact route asks for it).
	EverySmallFragment bool `json:"every_small_fragment,omitempty"`
}
