// The store operations of a datagen log over its lsm.Store: appends (batch rules, then the
// per-item item_seq rules against what is stored, then one atomic WAL append that the caller
// seals before answering) and the reads (an item's events, a root's events, one blob, root
// statuses, the overview), each touching only the key ranges it needs.
package datagen

import (
	"bytes"
	"cmp"
	"context"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"
	"sync"
	"weak"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"golang.org/x/sync/errgroup"

	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
)

// Log is one datagen store as this process sees it: the store, the per-item append locks and
// the overview's incremental state. One per open store (LogOf).
type Log struct {
	s *lsm.Store
	// stripes serialize this process's appends to one item (an item hashes to one stripe; a
	// batch takes its items' stripes in index order), so the item_seq check and the append it
	// guards are one step. Writers on other workers are not serialized with these: one item has
	// one live writer at a time (its writer_epoch), which is the pipeline's contract.
	stripes [64]sync.Mutex
	seed    maphash.Seed
	ov      overviewState // guarded by ov.mu
}

var (
	logsMu sync.Mutex // guards logs
	logs   = map[weak.Pointer[lsm.Store]]*Log{}
)

// LogOf returns the Log of store s, creating it on first use. It lives as long as s does.
func LogOf(s *lsm.Store) *Log {
	p := weak.Make(s)
	logsMu.Lock()
	defer logsMu.Unlock()
	if l, ok := logs[p]; ok {
		return l
	}
	l := &Log{s: s, seed: maphash.MakeSeed()}
	logs[p] = l
	runtime.AddCleanup(s, func(p weak.Pointer[lsm.Store]) {
		logsMu.Lock()
		delete(logs, p)
		logsMu.Unlock()
	}, p)
	return l
}

// readColumns are the columns reads fold from: every column but the blob bytes.
var readColumns = func() []string {
	var out []string
	for _, f := range kinds.DatagenSchema.Fields() {
		if f.Name != "value_blob" && f.Name != kinds.DatagenKeyColumn {
			out = append(out, f.Name)
		}
	}
	return out
}()

// foldColumns are what a fold reads: the failure, provenance and audit columns (error text,
// tracebacks, checkpoint, run, writer, timestamps) are left out — a fold never looks at them.
var foldColumns = func() []string {
	skip := map[string]bool{"checkpoint_id": true, "run_id": true, "writer_epoch": true, "error_type": true, "error_dump": true,
		"traceback": true, "event_ts": true, "schema_version": true}
	var out []string
	for _, c := range readColumns {
		if !skip[c] {
			out = append(out, c)
		}
	}
	return out
}()

// maxReadPage is the scan page of the read paths. An item's events up to this many are read in
// one page, which is one snapshot: a checkpoint is seen whole or not at all.
const maxReadPage = 10_000

// scanRange reads every event with a key in (after, before), in key order.
func (l *Log) scanRange(ctx context.Context, after, before string, columns []string, visit func(arrow.RecordBatch) error) error {
	for {
		page, err := l.s.Scan(ctx, lsm.ScanOptions{Columns: columns, After: after, Before: before, Limit: maxReadPage})
		if err != nil {
			return err
		}
		err = visit(page.Rows)
		page.Rows.Release()
		if err != nil || page.Next == "" {
			return err
		}
		after = page.Next
	}
}

// ItemEvents returns every event of item, ordered by (item_seq, event_id); blob values carry
// their bytes only when withBlobs.
func (l *Log) ItemEvents(ctx context.Context, item string, withBlobs bool) ([]Event, error) {
	evs, err := l.itemEvents(ctx, item, withBlobs)
	if err != nil {
		return nil, err
	}
	sortEvents(evs)
	return evs, nil
}

// itemEvents is every event of item, in key order.
func (l *Log) itemEvents(ctx context.Context, item string, withBlobs bool) ([]Event, error) {
	columns := readColumns
	if withBlobs {
		columns = append(slices.Clone(readColumns), "value_blob")
	}
	return l.readItem(ctx, item, columns)
}

// readItem reads the given columns of every event of item, in key order.
func (l *Log) readItem(ctx context.Context, item string, columns []string) ([]Event, error) {
	after, before := ItemRange(item)
	return l.readEvents(ctx, nil, after, before, columns)
}

// readEvents appends to out the events with keys in (after, before), in key order.
func (l *Log) readEvents(ctx context.Context, out []Event, after, before string, columns []string) ([]Event, error) {
	err := l.scanRange(ctx, after, before, columns, func(rec arrow.RecordBatch) error {
		evs, err := FromRecord(rec)
		if out == nil {
			out = evs // the first page as it is: events are large, copying them costs
		} else {
			out = append(out, evs...)
		}
		return err
	})
	return out, err
}

// RootEvents returns every event of root and of its descendants, ordered by (item_id, item_seq,
// event_id), without blob bytes.
func (l *Log) RootEvents(ctx context.Context, root string) ([]Event, error) {
	out, err := l.readItem(ctx, root, readColumns)
	if err != nil {
		return nil, err
	}
	after, before := SubItemRange(root)
	if out, err = l.readEvents(ctx, out, after, before, readColumns); err != nil {
		return nil, err
	}
	sortEvents(out)
	return out, nil
}

// sortEvents orders evs by (item_id, item_seq, event_id), moving each event once (events are
// large: sorting them in place would copy them log n times).
func sortEvents(evs []Event) {
	order := make([]int, len(evs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := &evs[a], &evs[b]
		return cmp.Or(strings.Compare(x.ItemID, y.ItemID), cmp.Compare(x.ItemSeq, y.ItemSeq), strings.Compare(x.EventID, y.EventID))
	})
	sorted := make([]Event, len(evs))
	for i, j := range order {
		sorted[i] = evs[j]
	}
	copy(evs, sorted)
}

// Fold is item's folded state (nil: never started), blobs with their bytes when loadBlobs.
func (l *Log) Fold(ctx context.Context, item string, loadBlobs bool) (*FoldedItem, error) {
	columns := foldColumns
	if loadBlobs {
		columns = append(slices.Clone(foldColumns), "value_blob")
	}
	evs, err := l.readItem(ctx, item, columns) // Fold orders them itself
	if err != nil {
		return nil, err
	}
	return Fold(evs)
}

// ItemFailures lists item's FAILED events in item_seq order.
func (l *Log) ItemFailures(ctx context.Context, item string) ([]Failure, error) {
	evs, err := l.itemEvents(ctx, item, false)
	if err != nil {
		return nil, err
	}
	return Failures(evs)
}

// RootStatuses classifies roots by their folded lifecycle status; a root never started is
// absent. Each root costs a read of its own events only.
func (l *Log) RootStatuses(ctx context.Context, roots []string) (map[string]string, error) {
	out := make(map[string]string, len(roots))
	for _, r := range roots {
		item, err := l.Fold(ctx, r, false)
		if err != nil {
			return nil, err
		}
		if item != nil {
			out[r] = item.Status
		}
	}
	return out, nil
}

// Blob returns the bytes of event eventID's blob value; ok is false when the event does not
// exist or holds no blob. With item (the event's item_id, as a folded item's blob_event_ids
// give it) it is one point read; without, it scans the log for the event.
func (l *Log) Blob(ctx context.Context, eventID, item string) (blob []byte, ok bool, err error) {
	columns := []string{"event_id", "value_kind", "value_blob"}
	take := func(rec arrow.RecordBatch) {
		ids := rec.Column(0).(*array.String)
		valueKinds := rec.Column(1).(*array.String)
		blobs := rec.Column(2).(*array.LargeBinary)
		for i := 0; i < ids.Len(); i++ {
			if ids.Value(i) == eventID && !ok && valueKinds.IsValid(i) && valueKinds.Value(i) == KindBlob && blobs.IsValid(i) {
				blob, ok = bytes.Clone(blobs.Value(i)), true
			}
		}
	}
	if item != "" {
		rec, err := l.s.Get(ctx, Key(item, eventID), columns)
		if err != nil || rec == nil {
			return nil, false, err
		}
		take(rec)
		rec.Release()
		return blob, ok, nil
	}
	after := ""
	for !ok {
		page, err := l.s.Scan(ctx, lsm.ScanOptions{Columns: columns, After: after, Limit: maxReadPage, Filters: map[string]any{"event_id": eventID}})
		if err != nil {
			return nil, false, err
		}
		take(page.Rows)
		page.Rows.Release()
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	return blob, ok, nil
}

// Append writes a batch of events (checkpoint: as one atomic step boundary) through write, which
// appends the record to the store and seals it before returning. Everything is checked first —
// the batch's rules, then each item's stored item_seqs — and a failed check writes nothing. It
// returns the number of events written.
func (l *Log) Append(ctx context.Context, batch *Batch, checkpoint bool, write func(arrow.RecordBatch) error) (int, error) {
	if err := batch.Validate(checkpoint); err != nil {
		return 0, err
	}
	byItem := map[string][]int32{} // an item's rows in the batch
	for i := range batch.Len() {
		item := batch.itemID.Value(i)
		byItem[item] = append(byItem[item], int32(i))
	}
	unlock := l.lockItems(byItem)
	defer unlock()
	// Each item's stored history is its own key range: read them a few at a time.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(checkConcurrency)
	for item, rows := range byItem {
		g.Go(func() error { return l.checkSequence(gctx, item, batch, rows) })
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	if err := write(batch.Record()); err != nil {
		return 0, err
	}
	return batch.Len(), nil
}

// checkConcurrency bounds the item histories one append reads at once.
const checkConcurrency = 8

// lockItems takes the stripes of the batch's items in index order and returns their unlock.
func (l *Log) lockItems(byItem map[string][]int32) func() {
	var set [len(Log{}.stripes)]bool
	for item := range byItem {
		set[maphash.String(l.seed, item)%uint64(len(set))] = true
	}
	for i, on := range set {
		if on {
			l.stripes[i].Lock()
		}
	}
	return func() {
		for i, on := range set {
			if on {
				l.stripes[i].Unlock()
			}
		}
	}
}

// checkSequence holds a batch's new events of one item to the item's stored history: an event
// already stored (its id) is a retry and passes; a new event must take an item_seq above every
// stored one — a lower or equal one is a second writer on the item, or a stale one.
func (l *Log) checkSequence(ctx context.Context, item string, batch *Batch, rows []int32) error {
	stored := map[string]bool{}
	last := int64(-1)
	after, before := ItemRange(item)
	err := l.scanRange(ctx, after, before, []string{"event_id", "item_seq"}, func(rec arrow.RecordBatch) error {
		ids := rec.Column(0).(interface{ Value(int) string })
		seqs := rec.Column(1).(interface{ Value(int) int64 })
		for i := 0; i < int(rec.NumRows()); i++ {
			stored[ids.Value(i)] = true
			last = max(last, seqs.Value(i))
		}
		return nil
	})
	if err != nil || len(stored) == 0 {
		return err
	}
	for _, r := range rows {
		id, seq := batch.eventID.Value(int(r)), batch.seq.Value(int(r))
		if !stored[id] && seq <= last {
			return invalidf("item '%s' is at item_seq %d; event '%s' has item_seq %d (a new event's item_seq must be greater: a second or stale writer?)",
				item, last, id, seq)
		}
	}
	return nil
}
