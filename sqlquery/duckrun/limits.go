// Limits of the queries a runner runs.
package duckrun

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

// Limits bound what queries may use. Each query has its own DuckDB database, so the memory and
// spill limits are per query; MaxConcurrent bounds the process's total.
type Limits struct {
	MemoryBytes   int64         // DuckDB's memory limit per query (default 512 MiB)
	Threads       int           // DuckDB threads per query (default 2, at most GOMAXPROCS)
	Timeout       time.Duration // longest a query runs, snapshot included (default 60 s)
	MaxConcurrent int           // queries at once in the process (default 2); more are refused
	SpillDir      string        // where queries spill what exceeds their memory (default $TMPDIR/strata-sql-<uid>)
	SpillBytes    int64         // the most a query may spill (default 8 GiB)
	// NoFragmentFiles makes every query read its snapshot as one Arrow stream, even of a store on
	// a local disk, whose fragments DuckDB otherwise reads itself (tests compare the two).
	NoFragmentFiles bool
}

func (l Limits) withDefaults() Limits {
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = 512 << 20
	}
	if l.Threads <= 0 {
		l.Threads = min(2, runtime.GOMAXPROCS(0))
	}
	if l.Timeout <= 0 {
		l.Timeout = time.Minute
	}
	if l.MaxConcurrent <= 0 {
		l.MaxConcurrent = 2
	}
	if l.SpillDir == "" {
		// One per user: a directory another user made first would not be writable.
		l.SpillDir = filepath.Join(os.TempDir(), "strata-sql-"+strconv.Itoa(os.Getuid()))
	}
	if l.SpillBytes <= 0 {
		l.SpillBytes = 8 << 30
	}
	return l
}
