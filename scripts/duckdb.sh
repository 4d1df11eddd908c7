#!/usr/bin/env bash
# Installs DuckDB's Node.js binding (npm @duckdb/node-api) once into .data/interop and prints that
# directory: the Parquet interop check and the P9 scan benchmark run DuckDB from there.
set -euo pipefail
dir=.data/interop
mkdir -p "$dir"
if [ ! -d "$dir/node_modules/@duckdb/node-api" ]; then
  (cd "$dir" && npm install --loglevel=error --no-audit --no-fund @duckdb/node-api@1.5.6-r.1 >/dev/null)
fi
cd "$dir" && pwd
