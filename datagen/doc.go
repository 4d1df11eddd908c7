// Package datagen is the datagen store kind: lance-context's append-only checkpoint log of a
// data-generation pipeline. Each row is one Event (an item created, a field set or appended, a
// step started or completed, a failure, a terminal state); an item's current state is the fold
// of its events (Fold). The package owns the event model and its validation (event.go), the
// deterministic event ids and item ids (ids.go), the Arrow layout of the log (record.go), the
// fold and its read lenses (fold.go, overview.go) and the store operations over an lsm.Store
// (log.go): appends with their batch and per-item rules, and reads that touch only the events
// they need — an item's events are one key range, because the log's key is item_id NUL event_id.
//
// The wire format (field names, enum strings, error cases) is lance-context's; docs/format/
// datagen.md specifies it, the physical columns and the read paths.
package datagen
