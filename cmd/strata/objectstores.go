// The object stores this binary serves beyond the ones storage/objstore builds in (file://, s3://,
// az://): gs:// lives in its own package so that only binaries that serve it link Google's client
// library. Importing it registers the scheme with objstore.Open.
package main

import (
	_ "github.com/strata-store/strata/storage/objstore/gcs" // gs://bucket/prefix
)
