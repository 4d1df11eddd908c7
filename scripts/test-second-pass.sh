#!/usr/bin/env bash
# `make test`'s second pass, after the race pass, in lanes side by side (the suites mostly wait on
# services, so side by side the pass takes about as long as its longest lane):
#   - on each object store's test service (one lane each: two suites on one emulator at once
#     overload it — Azurite is one Node process), the WAL's suite (storage/lsm; on the first store
#     with WAL entry objects for its tests on stores of their own too, the layout of stores that
#     cannot write in place) and then the API's, without the race detector;
#   - storage/table's heavy tests, which skip under the race detector (skipUnderRace), without it,
#     then internal/testenv's (the service scripts as processes; not in the race pass);
#   - the DuckDB Parquet interop check and the browser check (scripts/e2e.sh, its own stack).
# Each lane writes its events and report to files of its own; when it ends, its report is
# printed and its events are appended to the run's file.
#
#   scripts/test-second-pass.sh <events.json> <store>...   (stores: s3 azure gcs)
#   env: GO (go)
set -uo pipefail

json=$1
shift
go=${GO:-go}
first=$1

# gotest <lane> <go test arguments...>: one go test run of a lane, its events and report kept.
gotest() {
  local lane=$1
  shift
  "$go" test -json -count=1 -timeout 10m "$@" | tee -a "$json.$lane" | "$go" run ./internal/testreport -slowest 0 >>"$json.$lane.log" 2>&1
}

# suites <store>: the WAL's suite, then the API's, on store.
suites() {
  local store=$1 layout= status=0
  [ "$store" = "$first" ] && layout=entries
  STRATA_TEST_LSM_STORAGE=$store STRATA_TEST_WAL_LAYOUT=$layout gotest "$store" -tags gcs ./storage/lsm/ || status=1
  STRATA_TEST_API_STORAGE=$store gotest "$store" -tags gcs ./api/ || status=1
  return $status
}

# heavy_tests <dir>: the tests of a package that call skipUnderRace(t) first, as a regexp
# alternation.
heavy_tests() {
  grep -h -A1 '^func Test' "$1"/*_test.go | grep -B1 '^\sskipUnderRace(t)' | grep -o '^func Test[A-Za-z0-9_]*' \
    | sed 's/^func //' | paste -sd'|'
}

checks() {
  { scripts/check-parquet-interop.sh && scripts/e2e.sh; } >>"$json.checks.log" 2>&1
}

# The test binaries are built once, before the lanes start side by side.
"$go" test -tags gcs -count=1 -run '^$' ./storage/lsm/ ./api/ ./storage/table/ >/dev/null || exit 1
"$go" test -count=1 -run '^$' ./internal/testenv/ >/dev/null || exit 1
lanes=("$@" table checks)
declare -A pids
for lane in "${lanes[@]}"; do
  : >"$json.$lane" && : >"$json.$lane.log"
  case $lane in
  table) { st=0; gotest table -tags gcs -run "^($(heavy_tests storage/table))\$" ./storage/table/ || st=1; gotest table ./internal/testenv/ || st=1; exit $st; } & ;;
  checks) checks & ;;
  *) suites "$lane" & ;;
  esac
  pids[$lane]=$!
done
failed=0
for lane in "${lanes[@]}"; do
  wait "${pids[$lane]}" || failed=1
  echo "--- $lane:"
  cat "$json.$lane.log"
  cat "$json.$lane" >>"$json"
  rm -f "$json.$lane" "$json.$lane.log"
done
exit $failed
