// The application error types of maintenance failures: stable names an operator reads in the
// Temporal UI, in the StrataLastError search attribute and in `strata status`, and that
// retry policies and tests match on. Activities classify every error they return into one of
// them; renaming one breaks saved queries, so each is written once, here.
package workflows

const (
	// ErrStoreGone: the store no longer exists (deleted or never registered). Non-retryable; the
	// store's maintenance workflow ends.
	ErrStoreGone = "StoreGone"
	// ErrObjectStoreUnavailable: the store's storage failed a call (disk full, I/O error,
	// permission, an unreachable or failing S3 endpoint, a call that timed out). Retried.
	ErrObjectStoreUnavailable = "ObjectStoreUnavailable"
	// ErrStorageStalled: the operation made no progress (no storage call finished, no phase
	// advanced) within the stall timeout: a call hung. The attempt is abandoned and retried.
	ErrStorageStalled = "StorageStalled"
	// ErrCorrupt: stored bytes that do not decode into what this store could have written.
	// Retrying the activity cannot fix it (non-retryable); the workflow keeps re-queueing the
	// operation with backoff so the store stays flagged until an operator repairs it.
	ErrCorrupt = "Corrupt"
	// ErrCatalogUnavailable: PostgreSQL could not be reached. Retried.
	ErrCatalogUnavailable = "CatalogUnavailable"
	// ErrOverloaded: the process could not take the work right now (merge memory, caps). Retried.
	ErrOverloaded = "Overloaded"
	// ErrFenced: another process owns the store's write shard. Retried.
	ErrFenced = "Fenced"
	// ErrCommitConflict: the commit kept losing compare-and-swap races to other writers. Retried.
	ErrCommitConflict = "CommitConflict"
	// ErrTimedOut: the server timed the attempt out — its worker stopped heartbeating (it died or
	// froze) or it ran past its StartToClose timeout. Retried (possibly on another worker).
	ErrTimedOut = "TimedOut"
	// ErrInternal: anything else (a bug): the message says what.
	ErrInternal = "Internal"
)

// nonRetryableErrorTypes are the error types an activity retry cannot fix.
var nonRetryableErrorTypes = []string{ErrStoreGone, ErrCorrupt}
