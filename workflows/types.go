// Package workflows holds Strata's Temporal workflows. Workflow code only orchestrates: it keeps
// a per-store queue of maintenance requests and runs them one activity at a time; every byte of
// storage work happens in package activities. Inputs are small JSON structs with stable field
// names, so operators can start and signal workflows with the temporal CLI.
package workflows

import (
	"fmt"
	"time"

	"github.com/strata-store/strata/internal/compaction"
	"github.com/strata-store/strata/kinds/kind"
)

// TaskQueue is the task queue every maintenance workflow and activity runs on.
const TaskQueue = "strata-maintenance"

// RequestSignal is the signal that adds a request to a store's maintenance queue.
const RequestSignal = "maintenance-request"

// RunUpdate is the update that queues a request like RequestSignal and answers with its result
// once it has run (update-with-start: the API's synchronous compact route).
const RunUpdate = "run"

// Op names a maintenance operation.
type Op string

const (
	OpMergeWAL        Op = "merge_wal"        // fold sealed WAL generations into the base table (index first)
	OpBuildKeyIndex   Op = "build_key_index"  // make the key index cover every fragment
	OpCompact         Op = "compact"          // compact fragments, then re-cover the index
	OpCleanupVersions Op = "cleanup_versions" // delete expired versions and unreferenced files
	OpStatsRefresh    Op = "stats_refresh"    // observe the store and upsert its catalog stats
)

// Valid reports whether op is a known operation.
func (op Op) Valid() bool {
	switch op {
	case OpMergeWAL, OpBuildKeyIndex, OpCompact, OpCleanupVersions, OpStatsRefresh:
		return true
	}
	return false
}

// Request is one queued maintenance request. Identical requests queued twice run once.
type Request struct {
	Op Op `json:"op"`
	// MaxPasses bounds merge passes (merge_wal); 0 means until the shards are drained.
	MaxPasses int `json:"max_passes,omitempty"`
	// Overrides change the worker's compaction config for this request (compact); their members
	// are the request's own in JSON.
	compaction.Overrides
	// ID is set on requests made by the RunUpdate (the update's ID): the caller waits for this
	// run's result, so it is never merged with an identical request.
	ID string `json:"id,omitempty"`
}

// StoreRef names a store. Kind is decoded from outside (a Temporal client may send anything):
// activities check it (kind.Kind.Valid) before using it.
type StoreRef struct {
	Kind kind.Kind `json:"kind"`
	Name string    `json:"name"`
}

// WorkflowID is the ID of a store's maintenance workflow: store/<kind>/<name>.
func (s StoreRef) WorkflowID() string { return fmt.Sprintf("store/%s/%s", s.Kind, s.Name) }

// StoreMaintenanceInput starts (or continues) a store's maintenance workflow.
type StoreMaintenanceInput struct {
	Store   StoreRef  `json:"store"`
	Pending []Request `json:"pending,omitempty"`
	// Failures counts consecutive failed operations (drives the cooldown); carried across
	// continue-as-new.
	Failures int `json:"failures,omitempty"`
	// Failing lists the operations whose latest run failed, in the order they started failing;
	// carried across continue-as-new. While it is not empty the workflow is flagged failing.
	Failing []Failure `json:"failing,omitempty"`
	// SearchAttributes: the namespace has Strata's search attributes (learnt from the outcome
	// activity; carried across continue-as-new).
	SearchAttributes bool `json:"search_attributes,omitempty"`
}

// Failure is an operation of a store whose latest run exhausted its activity retries.
type Failure struct {
	Op        Op        `json:"op"`
	ErrorType string    `json:"error_type"` // one of the Err* types
	Message   string    `json:"message"`
	Since     time.Time `json:"since"`   // the first failure of this streak
	LastAt    time.Time `json:"last_at"` // the latest failure
	Count     int       `json:"count"`   // failed runs in this streak
}

// OutcomeInput tells the catalog that an operation of a store failed (Failure set) or
// succeeded after failing (Failure nil).
type OutcomeInput struct {
	Store   StoreRef `json:"store"`
	Op      Op       `json:"op"`
	Failure *Failure `json:"failure,omitempty"`
}

// ActivityInput is what every maintenance activity receives.
type ActivityInput struct {
	Store   StoreRef `json:"store"`
	Request Request  `json:"request"`
}

// ActivityResult is what every maintenance activity returns (fields unused by an op are zero).
type ActivityResult struct {
	GenerationsMerged int   `json:"generations_merged,omitempty"`
	RowsMerged        int64 `json:"rows_merged,omitempty"`
	FragmentsRemoved  int   `json:"fragments_removed,omitempty"`
	FragmentsAdded    int   `json:"fragments_added,omitempty"`
	// FilesRemoved / FilesAdded (compactions): the objects the removed fragments referenced
	// (data files and deletion vectors) and the new data files.
	FilesRemoved        int    `json:"files_removed,omitempty"`
	FilesAdded          int    `json:"files_added,omitempty"`
	VersionsDeleted     int    `json:"versions_deleted,omitempty"`
	FilesDeleted        int    `json:"files_deleted,omitempty"`
	BytesDeleted        int64  `json:"bytes_deleted,omitempty"`
	GenerationsReleased int    `json:"generations_released,omitempty"` // cleanup: merged generations released (no consumer or read token holds them)
	TableVersion        uint64 `json:"table_version,omitempty"`
	// VectorIndexesBuilt (context stores): fragments whose vector index the activity built.
	VectorIndexesBuilt int `json:"vector_indexes_built,omitempty"`
	// TextIndexesBuilt (context stores): fragments whose full-text index the activity built.
	TextIndexesBuilt int `json:"text_indexes_built,omitempty"`
}
