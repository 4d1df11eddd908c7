// What a store's maintenance job is doing, as one value for every job (a merge pass, a
// compaction, the key-index build either starts with): the activities turn it into the heartbeat
// details the Temporal UI shows.
package lsm

// Phase is what a maintenance job is doing.
type Phase string

// The phases, in the order a job passes through them (a merge: planning to done; a compaction:
// waiting for budget, compacting, indexing, done).
const (
	PhaseIndexing         Phase = "indexing" // building or extending the key index
	PhasePlanning         Phase = "planning"
	PhaseWaitingForBudget Phase = "waiting_for_budget" // for merge memory from the process budget
	PhaseReading          Phase = "reading"
	PhaseCommitting       Phase = "committing"       // the table upsert that advances the watermark
	PhaseDropping         Phase = "dropping"         // the merged generations, from the shard manifest and storage
	PhaseCompacting       Phase = "compacting"       // merging fragments, holding its budget reservation
	PhaseIndexingVectors  Phase = "indexing_vectors" // building the vector indexes new fragments lack
	PhaseIndexingText     Phase = "indexing_text"    // building the full-text indexes new fragments lack
	PhaseDone             Phase = "done"
)

// Progress is a maintenance job's state, as reported to a ProgressFunc.
type Progress struct {
	Phase           Phase
	Shard           string // the shard a merge pass works on
	ReservedBytes   int64  // what the job holds from the merge memory budget
	GenerationsRead int    // a merge pass's generations read so far
	RowsMerged      int64  // a merge pass's rows, once committed
}

// WaitingForBudget reports whether the job waits for merge memory.
func (p Progress) WaitingForBudget() bool { return p.Phase == PhaseWaitingForBudget }

// ProgressFunc receives a job's progress; it must not block. A nil one ignores it.
type ProgressFunc func(Progress)

func (f ProgressFunc) report(p Progress) {
	if f != nil {
		f(p)
	}
}
