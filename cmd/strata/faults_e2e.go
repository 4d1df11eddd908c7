//go:build e2e

// The browser check's build (`go build -tags e2e`, scripts/e2e.sh) can slow the first base-table
// fragment write of the process, so the first scheduled merge stays running long enough for the
// Temporal UI to show its pending activity and heartbeat details.
// STRATA_E2E_SLOW_FRAGMENT_WRITES=<duration> enables it.
package main

import (
	"os"
	"strings"
	"time"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func objectsWrapper() func(objstore.Store) objstore.Store {
	delay, err := time.ParseDuration(os.Getenv("STRATA_E2E_SLOW_FRAGMENT_WRITES"))
	if err != nil || delay <= 0 {
		return nil
	}
	return func(inner objstore.Store) objstore.Store {
		f := objstoretest.NewFaulty(inner)
		f.AddRule(objstoretest.Rule{Latency: delay, Times: 1, Match: func(op objstoretest.Op, key string) bool {
			return op == objstoretest.OpPutIfAbsent && strings.Contains(key, "/data/") && strings.HasSuffix(key, ".parquet")
		}})
		return f
	}
}
