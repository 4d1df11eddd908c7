//go:build gcs

// With -tags gcs this test binary serves gs:// stores, so the suite can run on GCS
// (STRATA_TEST_LSM_STORAGE=gcs; see the Makefile's test target).
package lsm

import _ "github.com/strata-store/strata/storage/objstore/gcs" // registers gs://
