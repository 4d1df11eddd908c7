//go:build gcs

// With -tags gcs this test binary serves gs:// stores, so the object-store benchmarks (P10) run
// on GCS too (scripts/bench.sh builds with the tag).
package table

import _ "github.com/strata-store/strata/storage/objstore/gcs" // registers gs://
