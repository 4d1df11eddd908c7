//go:build !e2e

// Production builds inject no storage faults (see faults_e2e.go for the browser check's build).
package main

import "github.com/strata-store/strata/storage/objstore"

// objectsWrapper is nil: stores use the data directory as is.
func objectsWrapper() func(objstore.Store) objstore.Store { return nil }
