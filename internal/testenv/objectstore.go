// Choosing a test object store by name, for suites that run once more on each object store
// (STRATA_TEST_LSM_STORAGE, STRATA_TEST_API_STORAGE).
package testenv

import "testing"

// ObjectStoreKinds are the object stores a suite can be run on: the names ObjectStore takes.
var ObjectStoreKinds = []string{"s3", "azure", "gcs"}

// ObjectStore returns the URL of a fresh, empty place on the test service of kind (s3, azure or
// gcs; see S3, Azure and GCS). A run that names its object store asked for it: where S3, Azure
// and GCS skip a test when their service is missing, ObjectStore fails it, as it does for an
// unknown kind.
func ObjectStore(t testing.TB, kind string) string {
	t.Helper()
	available := map[string]func() error{"s3": s3Available, "azure": azureAvailable, "gcs": gcsAvailable}[kind]
	if available == nil {
		t.Fatalf("testenv: unknown object store %q (known: %v)", kind, ObjectStoreKinds)
	}
	if err := available(); err != nil {
		t.Fatalf("testenv: the run asks for %s and there is no such service: %v (run `make tools`, or `make test-services`)", kind, err)
	}
	switch kind {
	case "s3":
		return S3(t)
	case "azure":
		return Azure(t)
	}
	return GCS(t)
}
