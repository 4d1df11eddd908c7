// Compaction: rewrite small fragments, fragments with many deleted rows and an idle table's
// uncompressed fragments into fewer, fuller, compressed ones, materialising deletions, with the
// key index extended over the result.
//
// PlanCompaction is pure (a function of a manifest and a config; the config's Now, when unset,
// is read from the clock). ExecuteCompaction rewrites the planned fragments once and commits by
// CAS. If another writer committed meanwhile, the rewrite is rebased onto the new manifest when
// every source fragment is still there with the same deletion vector (so no row it copied was
// replaced or deleted since); otherwise it is redone against the new manifest, so an upsert
// committed during a compaction is neither lost nor resurrected.
package table

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/strata-store/strata/internal/compaction"
)

// DefaultTargetRowsPerFragment is CompactionConfig.TargetRowsPerFragment's default.
const DefaultTargetRowsPerFragment = 1 << 20

// CompactionConfig tunes Plan.
type CompactionConfig struct {
	MinFragments          int   // compact small fragments only when at least this many (default 4)
	TargetRowsPerFragment int64 // rows per output fragment; smaller fragments are candidates (default 1,048,576)
	// TargetBytesPerFragment ends an output fragment once its encoded bytes reach it (default
	// 64 MiB): on a store that cannot write in place a fragment is encoded in memory before it
	// is stored, so this bounds what one compaction holds however wide the rows.
	TargetBytesPerFragment int64
	DeletionRatio          float64 // a fragment with this share of deleted rows is a candidate on its own (default 0.2)
	// KeepDeletions: no share of deleted rows makes a fragment a candidate on its own (an
	// operator's compaction that asked not to materialize deletions); DeletionRatio is ignored.
	KeepDeletions      bool
	MaxSourceFragments int // cap per pass, so a huge backlog progresses incrementally (default 32)
	// EverySmallFragment rewrites every small fragment together instead of one size tier (an
	// operator's explicit compaction: "compact what is small now", whatever the rewriting costs).
	EverySmallFragment bool
	// CompressIdleAfter: once the table's latest version is this old (no merge, compaction or
	// other commit since), every fragment written uncompressed with at least CompressIdleMinBytes
	// is rewritten compressed, alone if it is the only one, instead of waiting for a size tier
	// that an idle table never fills (default DefaultCompressIdleAfter; negative: never).
	CompressIdleAfter time.Duration
	// CompressIdleMinBytes: a smaller uncompressed fragment is not worth a compaction (and the
	// version and cleanup that follow) on its own (default 1 MiB).
	CompressIdleMinBytes int64
	// Now is the time the plan is made at (zero: the clock's).
	Now time.Time
}

// With applies a maintenance request's overrides: a target or minimum it sets replaces c's,
// KeepDeletions and EverySmallFragment add to c's.
func (c CompactionConfig) With(o compaction.Overrides) CompactionConfig {
	if o.TargetRowsPerFragment > 0 {
		c.TargetRowsPerFragment = o.TargetRowsPerFragment
	}
	if o.MinFragments > 0 {
		c.MinFragments = o.MinFragments
	}
	c.KeepDeletions = c.KeepDeletions || o.KeepDeletions
	c.EverySmallFragment = c.EverySmallFragment || o.EverySmallFragment
	return c
}

// DefaultCompressIdleAfter is CompactionConfig.CompressIdleAfter's default.
const DefaultCompressIdleAfter = 30 * time.Minute

func (c CompactionConfig) withDefaults() CompactionConfig {
	if c.MinFragments <= 0 {
		c.MinFragments = 4
	}
	if c.TargetRowsPerFragment <= 0 {
		c.TargetRowsPerFragment = DefaultTargetRowsPerFragment
	}
	if c.TargetBytesPerFragment <= 0 {
		c.TargetBytesPerFragment = 64 << 20
	}
	if c.DeletionRatio <= 0 {
		c.DeletionRatio = 0.2
	}
	if c.MaxSourceFragments <= 0 {
		c.MaxSourceFragments = 32
	}
	if c.CompressIdleAfter == 0 {
		c.CompressIdleAfter = DefaultCompressIdleAfter
	}
	if c.CompressIdleMinBytes <= 0 {
		c.CompressIdleMinBytes = 1 << 20
	}
	if c.Now.IsZero() {
		c.Now = time.Now()
	}
	return c
}

// idle reports whether m's table has had no commit for CompressIdleAfter (c with defaults).
func (c CompactionConfig) idle(m *Manifest) bool {
	return c.CompressIdleAfter > 0 && !m.CreatedAt.IsZero() && c.Now.Sub(m.CreatedAt) >= c.CompressIdleAfter
}

// CompactionPlan names the fragments one pass rewrites; empty means nothing to do.
type CompactionPlan struct {
	Version uint64
	Sources []uint64
	Config  CompactionConfig
}

// PlanCompaction chooses fragments to rewrite: every fragment whose deleted share reaches
// DeletionRatio, and small fragments (fewer live rows than TargetRowsPerFragment) as one size
// tier: all of them but the largest ones that hold more than twice the live rows of every smaller
// fragment together (unless under TargetRowsPerFragment/256 rows, which cost next to nothing to
// rewrite), once the tier has MinFragments (every small fragment with EverySmallFragment); and,
// once the table is idle (CompressIdleAfter), every fragment written uncompressed (of at least
// CompressIdleMinBytes), each a candidate on its own like one with many deletions. At most
// MaxSourceFragments: those taken on their own first, then the small ones, smallest first.
//
// The tier bounds the rewriting: a fragment is rewritten only together with at least half its
// rows again, so a row is rewritten O(log n) times, where compacting every small fragment
// together would rewrite a growing table whole on every pass (quadratic in its size, with memory
// growing with it up to the byte target).
func PlanCompaction(m *Manifest, cfg CompactionConfig) CompactionPlan {
	cfg = cfg.withDefaults()
	plan := CompactionPlan{Version: m.Version, Config: cfg}
	idle := cfg.idle(m)
	var heavy, small []Fragment // heavy: candidates on their own
	for _, f := range m.Fragments {
		switch {
		case !cfg.KeepDeletions && f.Rows > 0 && float64(f.DeletedRows)/float64(f.Rows) >= cfg.DeletionRatio:
			heavy = append(heavy, f)
		case idle && f.Uncompressed && f.Bytes >= cfg.CompressIdleMinBytes:
			heavy = append(heavy, f)
		case f.LiveRows() < cfg.TargetRowsPerFragment:
			small = append(small, f)
		}
	}
	slices.SortFunc(small, func(a, b Fragment) int { return cmp.Compare(a.LiveRows(), b.LiveRows()) })
	if !cfg.EverySmallFragment {
		small = smallTier(small, cfg.MinFragments, cfg.TargetRowsPerFragment/256)
	} else if len(small) < cfg.MinFragments {
		small = nil
	}
	if len(heavy)+len(small) == 0 || (len(heavy) == 0 && len(small) < 2) {
		return plan
	}
	for _, f := range append(heavy, small...) {
		if len(plan.Sources) == cfg.MaxSourceFragments {
			break
		}
		plan.Sources = append(plan.Sources, f.ID)
	}
	slices.Sort(plan.Sources)
	return plan
}

// smallTier returns the tier of small (sorted by live rows): it without its largest fragments
// while each holds more than twice the rows of all smaller ones and at least floor rows; nil
// when fewer than minFragments remain.
func smallTier(small []Fragment, minFragments int, floor int64) []Fragment {
	var below int64 // live rows of small[:end-1]
	for _, f := range small {
		below += f.LiveRows()
	}
	end := len(small)
	for end > 0 {
		last := small[end-1].LiveRows()
		below -= last
		if last <= 2*below || last < floor {
			break
		}
		end--
	}
	if end < minFragments {
		return nil
	}
	return small[:end]
}

// CompactionResult reports a compaction.
type CompactionResult struct {
	Manifest         *Manifest
	FragmentsRemoved int
	FragmentsAdded   int
	// FilesRemoved counts the objects the removed fragments referenced: each one's data file and,
	// when it had deleted rows, its deletion vector. FilesAdded counts the new data files.
	FilesRemoved int
	FilesAdded   int
	RowsWritten  int64
}

// errSourcesChanged: a source fragment was removed or had rows deleted after it was read.
var errSourcesChanged = errors.New("compaction sources changed")

// Compact plans against the latest manifest and executes the plan. A config without Now is
// planned at the table's clock, the one its manifests' CreatedAt come from.
func (t *Table) Compact(ctx context.Context, cfg CompactionConfig) (CompactionResult, error) {
	m, err := t.Latest(ctx)
	if err != nil {
		return CompactionResult{}, err
	}
	if cfg.Now.IsZero() {
		cfg.Now = t.now()
	}
	return t.ExecuteCompaction(ctx, PlanCompaction(m, cfg))
}

// ExecuteCompaction runs a plan. Sources that no longer exist are dropped from it; an empty plan is a no-op.
func (t *Table) ExecuteCompaction(ctx context.Context, plan CompactionPlan) (CompactionResult, error) {
	for attempt := 0; attempt < 3; attempt++ {
		res, err := t.executeOnce(ctx, plan)
		if !errors.Is(err, errSourcesChanged) {
			return res, err
		}
	}
	return CompactionResult{}, fmt.Errorf("%w: compaction sources kept changing under concurrent writes", ErrConflict)
}

func (t *Table) executeOnce(ctx context.Context, plan CompactionPlan) (CompactionResult, error) {
	base, err := t.Latest(ctx)
	if err != nil {
		return CompactionResult{}, err
	}
	var sources []Fragment
	for _, id := range plan.Sources {
		if f, ok := base.Fragment(id); ok {
			sources = append(sources, f)
		}
	}
	if len(sources) == 0 {
		return CompactionResult{Manifest: base}, nil
	}
	cfg := plan.Config.withDefaults()

	// The output's key-index entries stream into a new run as its row groups are written, merged
	// with the tail runs that are small beside it (as an upsert's run is), which drops their
	// entries that point at the sources: without this every compaction would leave its sources'
	// entries behind for good, and lookups would read more runs the longer a table lives.
	// Liveness is judged on the manifest as this commit leaves it, less the new fragments (no
	// older run locates a row in them; their own entries are live by construction).
	var idx *runMerge
	var merged []IndexRun
	index := func(indexEntry) error { return nil } // no key index: nothing to keep
	if base.KeyIndex != nil {
		var rows, entryBytes int64
		for _, f := range sources {
			rows += f.LiveRows()
			entryBytes += indexEntryBytes(f)
		}
		after := base.next("compact", t.now())
		after.replaceFragments(sources, nil)
		_, merged = tailRuns(base.KeyIndex.Runs, int(rows))
		if idx, err = t.newRunMerge(ctx, after, merged, int(rows), entryBytes, false); err != nil {
			return CompactionResult{}, err
		}
		index = func(e indexEntry) error { return idx.add(ctx, e) }
	}

	out, err := t.mergeSources(ctx, base, sources, cfg, index)
	written, added := out.written, out.added
	cleanup := func() { t.deleteFiles(written) }
	if err != nil {
		if idx != nil {
			idx.abort()
		}
		cleanup()
		return CompactionResult{}, err
	}
	var seg *IndexRun
	if idx != nil && idx.entries() == 0 {
		idx.abort() // no row written: the index stays as it is
		merged = nil
	} else if idx != nil {
		s, err := idx.finish(ctx)
		if err != nil {
			cleanup()
			return CompactionResult{}, err
		}
		written = append(written, s.Path)
		seg = &s
	}

	m, err := t.commitWithRetry(ctx, "compact", func(latest *Manifest) (*Manifest, error) {
		for _, src := range sources {
			cur, ok := latest.Fragment(src.ID)
			if !ok || deletionKey(cur) != deletionKey(src) {
				return nil, errSourcesChanged
			}
		}
		for _, f := range added {
			if _, clash := latest.Fragment(f.ID); clash {
				return nil, errSourcesChanged
			}
		}
		next := latest.next("compact", t.now())
		next.replaceFragments(sources, added)
		if seg != nil && next.KeyIndex != nil {
			next.KeyIndex.Runs = replaceRuns(next.KeyIndex.Runs, merged, *seg)
			for _, f := range added {
				next.KeyIndex.Covered = insertSorted(next.KeyIndex.Covered, f.ID)
			}
		}
		next.Counters.Compactions++
		now := t.now()
		next.LastCompactAt = &now
		return next, nil
	})
	if err != nil {
		if !isCommitUnknown(err) {
			cleanup()
		}
		return CompactionResult{}, err
	}
	files := len(sources)
	for _, src := range sources {
		if src.DeletionFile != "" {
			files++
		}
	}
	return CompactionResult{Manifest: m, FragmentsRemoved: len(sources), FragmentsAdded: len(added),
		FilesRemoved: files, FilesAdded: len(added), RowsWritten: out.rows}, nil
}
