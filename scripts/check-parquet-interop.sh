#!/usr/bin/env bash
# Checks that Strata data fragments are plain Parquet that DuckDB reads as is (docs/format/table.md):
# writes two sample fragments with the Go test TestWriteSampleFragment (the second stores only the
# columns it has values in), then queries them together with DuckDB (npm @duckdb/node-api,
# installed once into .data/interop by scripts/duckdb.sh; union_by_name=true takes a column a
# fragment does not store as null) and compares the rows and types.
set -euo pipefail
dir=$(scripts/duckdb.sh)
frag=$dir/sample.parquet
STRATA_FRAGMENT_OUT="$frag" go test -count=1 -run '^TestWriteSampleFragment$' ./storage/table >/dev/null
cat >"$dir/query.mjs" <<'JS'
import { DuckDBInstance } from '@duckdb/node-api';
const inst = await DuckDBInstance.create(':memory:');
const conn = await inst.connect();
const files = process.argv.slice(2).map((f) => `'${f}'`).join(',');
const r = await conn.runAndReadAll(`SELECT id, value, payload, _seq, _tombstone, typeof(_seq) AS seq_type FROM read_parquet([${files}], union_by_name=true) ORDER BY id, _seq`);
console.log(JSON.stringify(r.getRowObjectsJson()));
JS
got=$(cd "$dir" && node query.mjs "$frag" "$dir/sample-sparse.parquet")
want='[{"id":"a","value":"1","payload":"y","_seq":"1","_tombstone":false,"seq_type":"UBIGINT"},{"id":"a","value":null,"payload":null,"_seq":"3","_tombstone":true,"seq_type":"UBIGINT"},{"id":"b","value":"2","payload":"x","_seq":"2","_tombstone":false,"seq_type":"UBIGINT"}]'
if [ "$got" != "$want" ]; then
  echo "check-parquet-interop: DuckDB read $got" >&2
  echo "check-parquet-interop: expected    $want" >&2
  exit 1
fi
echo "check-parquet-interop: DuckDB reads Strata fragments as plain Parquet"
