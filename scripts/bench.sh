#!/usr/bin/env bash
# `make bench [BENCH=<ID-prefix>]`: runs the benchmarks of the selected figure group once each and
# prints every figure as `BENCH <ID> <value> <unit> <description>`, then the same figures as a
# markdown table (also written to .data/bench/results.md).
set -euo pipefail
prefix=${1:-}
group=${prefix%%-*}
mkdir -p .data/bench
out=.data/bench/raw.txt
case "$group" in
  "" | P9) STRATA_DUCKDB_DIR=$(scripts/duckdb.sh); export STRATA_DUCKDB_DIR ;; # P9 compares scans with DuckDB
esac
STRATA_BENCH="$prefix" go test -tags gcs,duckdb_arrow,sqlbench -p 1 -run '^$' -bench "^Benchmark${group}[A-Z]" -benchtime 1x -timeout 90m ./... 2>&1 | tee "$out" |
  grep -E '^(BENCH |FAIL|--- FAIL|panic:)' || true
if grep -qE '^(FAIL|--- FAIL|panic:)' "$out"; then
  echo "bench.sh: a benchmark failed; full output in $out" >&2
  exit 1
fi
{
  echo
  echo "| ID | value | unit | description |"
  echo "|---|---:|---|---|"
  awk '/^BENCH /{ d=""; for (i = 5; i <= NF; i++) d = d (i > 5 ? " " : "") $i; printf "| %s | %s | %s | %s |\n", $2, $3, $4, d }' "$out"
} | tee .data/bench/results.md
grep -q '^BENCH ' "$out" || { echo "bench.sh: no figure matched '${prefix}'" >&2; exit 1; }
