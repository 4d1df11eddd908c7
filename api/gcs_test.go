//go:build gcs

// With -tags gcs this test binary serves gs:// stores, so the suite can run on GCS
// (STRATA_TEST_API_STORAGE=gcs; see the Makefile's test target).
package api_test

import _ "github.com/strata-store/strata/storage/objstore/gcs" // registers gs://
