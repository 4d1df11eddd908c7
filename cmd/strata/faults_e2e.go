//go:build e2e

// The browser check's build (`go build -tags e2e`, scripts/e2e.sh) can inject two storage faults:
//   - STRATA_E2E_SLOW_FRAGMENT_WRITES=<duration> slows the first base-table fragment write of the
//     process, so the first scheduled merge stays running long enough for the Temporal UI to show
//     its pending activity and heartbeat details;
//   - STRATA_E2E_FAIL_WRITES_OF=<store name> with STRATA_E2E_FAIL_WHILE=<file>: while the file
//     exists, fragment writes of that store fail with "permission denied", so its merges fail
//     until the check removes the file (the cause, fixed).
package main

import (
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

func isFragmentWrite(op objstoretest.Op, key string) bool {
	return op == objstoretest.OpPutIfAbsent && strings.Contains(key, "/data/") && strings.HasSuffix(key, ".parquet")
}

func objectsWrapper() func(objstore.Store) objstore.Store {
	delay, _ := time.ParseDuration(os.Getenv("STRATA_E2E_SLOW_FRAGMENT_WRITES"))
	failStore, failWhile := os.Getenv("STRATA_E2E_FAIL_WRITES_OF"), os.Getenv("STRATA_E2E_FAIL_WHILE")
	if delay <= 0 && (failStore == "" || failWhile == "") {
		return nil
	}
	return func(inner objstore.Store) objstore.Store {
		f := objstoretest.NewFaulty(inner)
		if failStore != "" && failWhile != "" {
			f.AddRule(objstoretest.Rule{Err: &os.PathError{Op: "open", Path: "fragment", Err: syscall.EACCES},
				Match: func(op objstoretest.Op, key string) bool {
					if !isFragmentWrite(op, key) || !strings.Contains(key, "/"+failStore+".") {
						return false
					}
					_, err := os.Stat(failWhile)
					return err == nil
				}})
		}
		if delay > 0 {
			f.AddRule(objstoretest.Rule{Latency: delay, Times: 1, Match: isFragmentWrite})
		}
		return f
	}
}
