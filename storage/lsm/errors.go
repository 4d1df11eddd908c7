// Errors of a store: the shard writer's, under the names callers of the store use.
package lsm

import (
	"errors"

	"github.com/strata-store/strata/storage/shard"
)

var (
	// ErrFenced: another process claimed this process's shard of the store; its further appends
	// fail. Everything it acknowledged before is durable and replayed by the new owner.
	ErrFenced = shard.ErrFenced
	// ErrOverloaded: the store or the process cannot take more right now (pending generations
	// past a cap, a full write buffer, merges overtaking a read); retry later.
	ErrOverloaded = shard.ErrOverloaded
	// ErrClosed: the store was closed.
	ErrClosed = shard.ErrClosed
	// ErrReadOnly: the store was opened by a process that does not append (Options.ReadOnly).
	ErrReadOnly = shard.ErrReadOnly
	// ErrCorrupt: WAL bytes that do not decode into a batch this store could have written.
	ErrCorrupt = shard.ErrCorrupt
	// ErrVanished: a pending generation a caller named was merged into the table meanwhile.
	ErrVanished = errors.New("lsm: the generation was merged")
)
