// The overview: a whole-log roll-up (root items by lifecycle status, failures by error type and
// by run, completed steps by name), kept incrementally per process. Its state is each item's
// contribution to the sums; a call folds again only the items whose events arrived since the
// state was last brought up to date — found in the key files of the generations sealed since —
// so a call at rest costs the snapshot, not a read of the log. A rebuild (one ordered read of
// the log, a few columns, one item's events held at a time) happens on first use and when a
// merge took generations this process never saw (their keys are gone with them).
package datagen

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/storage/lsm"
)

// FailureSample is how many root item ids a run's failure bucket names.
const FailureSample = 5

// Overview is lance-context's DatagenRunOverviewDto.
type Overview struct {
	Items               int                       `json:"items"` // root items: running + completed + filtered
	Running             int                       `json:"running"`
	Completed           int                       `json:"completed"`
	Filtered            int                       `json:"filtered"`
	Failures            int                       `json:"failures"` // FAILED events, of every item
	FailuresByErrorType map[string]int            `json:"failures_by_error_type"`
	FailuresByRun       map[string]*FailureBucket `json:"failures_by_run"`
	CompletedSteps      map[string]int            `json:"completed_steps"`
}

// FailureBucket is one run's failures, with the (up to FailureSample, smallest) root item ids
// that failed in it.
type FailureBucket struct {
	Failures            int            `json:"failures"`
	FailuresByErrorType map[string]int `json:"failures_by_error_type"`
	SampleRootItemIDs   []string       `json:"sample_root_item_ids"`
}

// contribution is what one started item adds to the overview.
type contribution struct {
	root     string
	isRoot   bool
	status   string
	steps    []string    // the step name of each STEP_COMPLETED
	failures [][2]string // (run_id, error_type) of each FAILED
}

// contributionOf folds one item's events (a read of overviewColumns) into its contribution; nil
// for an item never started.
func contributionOf(events []Event) (*contribution, error) {
	evs, err := ordered(events)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 || evs[0].EventType != ItemCreated {
		return nil, nil
	}
	c := &contribution{root: evs[0].RootItemID, isRoot: evs[0].ParentItemID == nil, status: StatusRunning}
	for _, e := range evs {
		switch e.EventType {
		case ItemCreated:
			c.status = StatusRunning
		case StepCompleted:
			c.steps = append(c.steps, str(e.StepName))
		case Failed:
			c.failures = append(c.failures, [2]string{e.RunID, str(e.ErrorType)})
		case Terminal:
			c.status = str(e.Status)
		}
	}
	return c, nil
}

// overviewColumns are what contributions need.
var overviewColumns = []string{"event_id", "item_id", "root_item_id", "parent_item_id", "item_seq", "event_type",
	"step_name", "status", "error_type", "run_id"}

// sums is the overview's running totals; runRoots counts each run's failures per root (for the
// sample).
type sums struct {
	items, running, completed, filtered, failures int
	byErrorType                                   map[string]int
	byRun                                         map[string]int
	byRunType                                     map[string]map[string]int
	runRoots                                      map[string]map[string]int
	steps                                         map[string]int
}

func newSums() sums {
	return sums{byErrorType: map[string]int{}, byRun: map[string]int{}, byRunType: map[string]map[string]int{},
		runRoots: map[string]map[string]int{}, steps: map[string]int{}}
}

func bump(m map[string]int, k string, d int) {
	if m[k] += d; m[k] == 0 {
		delete(m, k)
	}
}

func bumpIn(m map[string]map[string]int, k1, k2 string, d int) {
	inner := m[k1]
	if inner == nil {
		inner = map[string]int{}
		m[k1] = inner
	}
	bump(inner, k2, d)
	if len(inner) == 0 {
		delete(m, k1)
	}
}

// add adds c (sign +1) or takes it away (-1).
func (s *sums) add(c *contribution, sign int) {
	for _, st := range c.steps {
		bump(s.steps, st, sign)
	}
	for _, f := range c.failures {
		s.failures += sign
		bump(s.byErrorType, f[1], sign)
		bump(s.byRun, f[0], sign)
		bumpIn(s.byRunType, f[0], f[1], sign)
		bumpIn(s.runRoots, f[0], c.root, sign)
	}
	if !c.isRoot {
		return
	}
	s.items += sign
	switch c.status {
	case StatusCompleted:
		s.completed += sign
	case StatusFiltered:
		s.filtered += sign
	default:
		s.running += sign
	}
}

func (s *sums) overview() *Overview {
	o := &Overview{Items: s.items, Running: s.running, Completed: s.completed, Filtered: s.filtered, Failures: s.failures,
		FailuresByErrorType: maps.Clone(s.byErrorType), FailuresByRun: map[string]*FailureBucket{}, CompletedSteps: maps.Clone(s.steps)}
	for run, n := range s.byRun {
		roots := slices.Sorted(maps.Keys(s.runRoots[run]))
		o.FailuresByRun[run] = &FailureBucket{Failures: n, FailuresByErrorType: maps.Clone(s.byRunType[run]),
			SampleRootItemIDs: roots[:min(len(roots), FailureSample)]}
	}
	return o
}

// overviewState is a Log's incremental overview.
type overviewState struct {
	mu       sync.Mutex // held for a whole Overview call: one brings the state up to date at a time
	built    bool
	position lsm.Position // every write the store sealed up to here is in items
	items    map[string]*contribution
	sums     sums
}

// Overview returns the log's overview as of now: the items written since the last call are
// folded again (the store lists them); when it cannot, the whole log is read again.
func (l *Log) Overview(ctx context.Context) (*Overview, error) {
	st := &l.ov
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.built {
		position, err := l.s.CurrentPosition(ctx)
		if err == nil {
			err = l.rebuildOverview(ctx, position)
		}
		if err != nil {
			return nil, err
		}
		return st.sums.overview(), nil
	}
	keys, next, complete, err := l.s.ChangedKeys(ctx, st.position)
	if err != nil {
		return nil, err
	}
	if !complete {
		if err := l.rebuildOverview(ctx, next); err != nil {
			return nil, err
		}
		return st.sums.overview(), nil
	}
	touched := map[string]bool{}
	for _, k := range keys {
		item, _, _ := strings.Cut(k, "\x00")
		touched[item] = true
	}
	for item := range touched {
		evs, err := l.readItem(ctx, item, overviewColumns)
		if err != nil {
			return nil, err
		}
		c, err := contributionOf(evs)
		if err != nil {
			return nil, err
		}
		if old := st.items[item]; old != nil {
			st.sums.add(old, -1)
			delete(st.items, item)
		}
		if c != nil {
			st.items[item] = c
			st.sums.add(c, +1)
		}
	}
	st.position = next
	return st.sums.overview(), nil
}

// rebuildOverview recomputes the state from one ordered read of the log. Everything up to
// position is in that read (it starts after the position was taken), so it counts as seen.
func (l *Log) rebuildOverview(ctx context.Context, position lsm.Position) error {
	st := &l.ov
	items, total := map[string]*contribution{}, newSums()
	var cur []Event
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		c, err := contributionOf(cur)
		if err != nil {
			return err
		}
		if c != nil {
			items[cur[0].ItemID] = c
			total.add(c, +1)
		}
		cur = cur[:0]
		return nil
	}
	err := l.scanRange(ctx, "", "", overviewColumns, func(rec arrow.RecordBatch) error {
		evs, err := FromRecord(rec)
		if err != nil {
			return err
		}
		// Key order is item order: an item's events are contiguous.
		for _, e := range evs {
			if len(cur) > 0 && cur[0].ItemID != e.ItemID {
				if err := flush(); err != nil {
					return err
				}
			}
			cur = append(cur, e)
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	st.built, st.position, st.items, st.sums = true, position, items, total
	return nil
}
