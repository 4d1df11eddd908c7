// Errors of the MemWAL.
package memwal

import "errors"

var (
	// ErrFenced: another process claimed this shard with a higher epoch; this writer's further
	// appends fail. Everything it acknowledged before is durable and will be replayed by the new
	// owner.
	ErrFenced = errors.New("memwal: shard writer fenced by a newer epoch")
	// ErrOverloaded: too many sealed generations are pending merge (reads past the hard cap,
	// appends past the backpressure limit). Retry after the merge catches up.
	ErrOverloaded = errors.New("memwal: too many pending generations")
	// ErrClosed: the writer or store was closed.
	ErrClosed = errors.New("memwal: closed")
	// ErrCorrupt: WAL bytes that passed their checksums (or had none) do not decode into a batch
	// this store could have written. The error names the shard and entry; nothing panics.
	ErrCorrupt = errors.New("memwal: corrupt WAL entry")
)
