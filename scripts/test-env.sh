# Sourced by the Makefile's test and bench targets and by .ci/run: where the test services live.
# They are separate from `make run`'s (.data/pg on 5433, Temporal on 7233/8233) so running the
# tests never touches a developer's local data.
export STRATA_PG_DIR=${STRATA_TEST_PG_DIR:-.data/test/pg}
export STRATA_PG_PORT=${STRATA_TEST_PG_PORT:-55433}
export STRATA_PG_DB=postgres
export STRATA_TEMPORAL_PORT=${STRATA_TEST_TEMPORAL_PORT:-57233}
export STRATA_TEMPORAL_UI_PORT=${STRATA_TEST_TEMPORAL_UI_PORT:-58233}
export STRATA_TEMPORAL_DB=${STRATA_TEST_TEMPORAL_DB:-.data/test/temporal.db}
export STRATA_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:${STRATA_PG_PORT}/postgres?sslmode=disable"
export STRATA_TEST_TEMPORAL_ADDRESS="127.0.0.1:${STRATA_TEMPORAL_PORT}"
export STRATA_S3_PORT=${STRATA_TEST_S3_PORT:-57070}
export STRATA_S3_DIR=${STRATA_TEST_S3_DIR:-.data/test/s3}
export STRATA_S3_BUCKET=strata-test
export STRATA_S3_ACCESS_KEY=strata-test STRATA_S3_SECRET_KEY=strata-test-secret
export STRATA_TEST_S3_URL="s3://${STRATA_S3_BUCKET}?endpoint=http://127.0.0.1:${STRATA_S3_PORT}&path_style=true&region=us-east-1"
export AWS_ACCESS_KEY_ID=${STRATA_S3_ACCESS_KEY} AWS_SECRET_ACCESS_KEY=${STRATA_S3_SECRET_KEY}
# Azurite (Azure Blob) on a port outside the ephemeral range; its public development account.
export STRATA_AZURITE_PORT=${STRATA_TEST_AZURITE_PORT:-21000}
export STRATA_AZURITE_DIR=${STRATA_TEST_AZURITE_DIR:-.data/test/azurite}
export STRATA_AZURITE_CONTAINER=strata-test
export STRATA_AZURITE_IN_MEMORY=1
export STRATA_TEST_AZURE_URL="az://${STRATA_AZURITE_CONTAINER}"
eval "$(scripts/azurite.sh env)"
# fake-gcs-server (GCS) likewise; Google's client reaches an emulator through STORAGE_EMULATOR_HOST.
export STRATA_GCS_PORT=${STRATA_TEST_GCS_PORT:-21010}
export STRATA_GCS_DIR=${STRATA_TEST_GCS_DIR:-.data/test/gcs}
export STRATA_GCS_BUCKET=strata-test
export STRATA_GCS_BACKEND=memory
export STRATA_TEST_GCS_URL="gs://${STRATA_GCS_BUCKET}"
eval "$(scripts/fake-gcs.sh env)"
