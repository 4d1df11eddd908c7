#!/usr/bin/env bash
# The storage-dependent suites once more, without the race detector, on each object store's test
# service (`make test` runs this after the race pass): the WAL's (storage/lsm; on the first store
# with WAL entry objects for its tests on stores of their own too, the layout of stores that
# cannot write in place) and then the API's. The stores run side by side, each on its own
# emulator (two suites on one emulator at once overload it: Azurite is one Node process): the
# suites mostly wait on the services, so side by side the pass takes about half as long. Each
# store's suites write their events and report to files of their own; when they end, the report
# is printed and the events are appended to the run's file.
#
#   scripts/test-object-stores.sh <events.json> <store>...   (stores: s3 azure gcs)
#   env: GO (go)
set -uo pipefail

json=$1
shift
go=${GO:-go}
first=$1

# suites <store>: the WAL's suite, then the API's, on store.
suites() {
  local store=$1 layout= status=0
  [ "$store" = "$first" ] && layout=entries
  : >"$json.$store"
  STRATA_TEST_LSM_STORAGE=$store STRATA_TEST_WAL_LAYOUT=$layout "$go" test -tags gcs -json -count=1 -timeout 10m ./storage/lsm/ \
    | tee -a "$json.$store" | "$go" run ./internal/testreport -slowest 0 >"$json.$store.log" 2>&1 || status=1
  STRATA_TEST_API_STORAGE=$store "$go" test -tags gcs -json -count=1 -timeout 10m ./api/ \
    | tee -a "$json.$store" | "$go" run ./internal/testreport -slowest 0 >>"$json.$store.log" 2>&1 || status=1
  return $status
}

# The test binaries are built once, before the stores start side by side.
"$go" test -tags gcs -count=1 -run '^$' ./storage/lsm/ ./api/ >/dev/null || exit 1
declare -A pids
for store in "$@"; do
  suites "$store" &
  pids[$store]=$!
done
failed=0
for store in "$@"; do
  wait "${pids[$store]}" || failed=1
  echo "--- on $store:"
  cat "$json.$store.log"
  cat "$json.$store" >>"$json"
  rm -f "$json.$store" "$json.$store.log"
done
exit $failed
