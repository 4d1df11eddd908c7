#!/usr/bin/env bash
# Checks that a Strata data fragment is plain Parquet that DuckDB reads as is (docs/format/table.md):
# writes a sample fragment with the Go test TestWriteSampleFragment, then queries it with DuckDB
# (npm @duckdb/node-api, installed once into .data/interop by scripts/duckdb.sh) and compares the rows and types.
set -euo pipefail
dir=$(scripts/duckdb.sh)
frag=$dir/sample.parquet
STRATA_FRAGMENT_OUT="$frag" go test -count=1 -run '^TestWriteSampleFragment$' ./storage/table >/dev/null
cat >"$dir/query.mjs" <<'JS'
import { DuckDBInstance } from '@duckdb/node-api';
const inst = await DuckDBInstance.create(':memory:');
const conn = await inst.connect();
const r = await conn.runAndReadAll(`SELECT id, value, payload, _seq, _tombstone, typeof(_seq) AS seq_type FROM read_parquet('${process.argv[2]}') ORDER BY id`);
console.log(JSON.stringify(r.getRowObjectsJson()));
JS
got=$(cd "$dir" && node query.mjs "$frag")
want='[{"id":"a","value":"1","payload":"y","_seq":"1","_tombstone":false,"seq_type":"UBIGINT"},{"id":"b","value":"2","payload":"x","_seq":"2","_tombstone":false,"seq_type":"UBIGINT"}]'
if [ "$got" != "$want" ]; then
  echo "check-parquet-interop: DuckDB read $got" >&2
  echo "check-parquet-interop: expected    $want" >&2
  exit 1
fi
echo "check-parquet-interop: DuckDB reads Strata fragments as plain Parquet"
