// Errors of the MemWAL.
package shard

import "errors"

var (
	// ErrFenced: another process claimed this shard with a higher epoch; this writer's further
	// appends fail. Everything it acknowledged before is durable and will be replayed by the new
	// owner.
	ErrFenced = errors.New("shard: shard writer fenced by a newer epoch")
	// ErrOverloaded: the store or the process cannot take more right now — too many sealed
	// generations pending merge (reads past the hard cap, appends past the backpressure limit), or
	// the process's write buffer is full. Retry after merges or seals catch up.
	ErrOverloaded = errors.New("shard: overloaded")
	// ErrReadOnly: the store was opened by a process that does not append (Options.ReadOnly).
	ErrReadOnly = errors.New("shard: store opened read-only (this process does not append)")
	// ErrClosed: the writer or store was closed.
	ErrClosed = errors.New("shard: closed")
	// ErrCorrupt: WAL bytes that passed their checksums (or had none) do not decode into a batch
	// this store could have written. The error names the shard and entry; nothing panics.
	ErrCorrupt = errors.New("shard: corrupt WAL entry")
)
