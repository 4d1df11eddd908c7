#!/usr/bin/env bash
# `make e2e`: the browser checks of the Temporal Web UI and of the Strata UI. Starts a separate
# local stack (ports and data under .data/e2e) with a 5 s sweep schedule, appends rows until a store crosses the merge
# threshold, waits for the *scheduled* merge, and drives headless Chromium (Debian package
# `chromium`, npm `playwright-core`) through the UI: the workflow list, the store's maintenance
# workflow, its pending MergeWAL activity with heartbeat details, and the Schedules page; then a
# second store whose merges fail is found by the StrataFailing search attribute, its cause is
# removed and it is retried through the UI (Send a Signal "retry") until the merge succeeds;
# last, the Strata UI (/ui/, e2e/strata-ui.mjs): a store found by name, its rows filtered, a
# record and its blob download, an SQL query, a merge started from the store's page. Screenshots and logs land in .data/e2e/output.
#
# The strata binary is built with `-tags e2e`, whose only difference is opt-in storage faults
# (cmd/strata/faults_e2e.go): a delay on the first base-table fragment write, so the merge is
# still running when the browser looks at it, and refused fragment writes for the failing store.
set -euo pipefail
cd "$(dirname "$0")/.."

out=.data/e2e/output
rm -rf .data/e2e && mkdir -p "$out"
chromium=${STRATA_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "e2e.sh: installing Debian chromium"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >"$out/apt.log" 2>&1 ||
      { tail -20 "$out/apt.log" >&2; echo "e2e.sh: could not install chromium" >&2; exit 1; }
  else
    echo "e2e.sh: $chromium not found; install the Debian package chromium (or set STRATA_CHROMIUM)" >&2
    exit 1
  fi
fi
scripts/install-tool.sh npm e2e >/dev/null
go build -tags e2e,duckdb_arrow -o .data/e2e/strata ./cmd/strata

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
api_port=$(free_port); ui_port=$(free_port); t_port=$(free_port); pg_port=$(free_port)
export STRATA_PG_DIR=.data/e2e/pg STRATA_PG_PORT=$pg_port STRATA_TEMPORAL_PORT=$t_port STRATA_TEMPORAL_UI_PORT=$ui_port \
  STRATA_TEMPORAL_DB=.data/e2e/temporal.db STRATA_LISTEN_ADDR=127.0.0.1:$api_port STRATA_DATA_URL=file://.data/e2e/stores \
  STRATA_BIN=.data/e2e/strata STRATA_SWEEP_INTERVAL=5s STRATA_FLUSH_INTERVAL=1s STRATA_E2E_SLOW_FRAGMENT_WRITES=45s \
  STRATA_STALL_TIMEOUT=2m STRATA_DATABASE_URL= STRATA_TEMPORAL_ADDRESS=
# A second store whose fragment writes are refused while $failing_file exists (the e2e build).
failing_store=e2e-failing-$(date +%s)
failing_file=$PWD/.data/e2e/fail-merges
export STRATA_E2E_FAIL_WRITES_OF=$failing_store STRATA_E2E_FAIL_WHILE=$failing_file
setsid scripts/run.sh >"$out/stack.log" 2>&1 &
stack=$!
stop_stack() {
  kill -TERM -- "-$stack" 2>/dev/null || true
  for _ in $(seq 1 120); do kill -0 "$stack" 2>/dev/null || break; sleep 0.25; done
}
trap stop_stack EXIT
api=http://127.0.0.1:$api_port
for _ in $(seq 1 240); do
  curl -fsS "$api/api/v1/health" >/dev/null 2>&1 && break
  kill -0 "$stack" 2>/dev/null || { cat "$out/stack.log" >&2; echo "e2e.sh: the stack exited" >&2; exit 1; }
  sleep 0.25
done
curl -fsS "$api/api/v1/health" >/dev/null || { cat "$out/stack.log" >&2; exit 1; }

store=e2e-$(date +%s)
.data/e2e/strata store create --api-url "$api" "rollout/$store"
# Ten appends a little over a flush interval apart: the flush sweeper seals each into its own
# generation and reports the shard's pending generations to the catalog (threshold: 8).
for batch in $(seq 1 10); do
  for i in $(seq 1 50); do echo "{\"id\":\"b$batch-r$i\",\"rollout_id\":\"e2e\",\"content\":\"row $i of batch $batch\"}"; done >"$out/batch.jsonl"
  .data/e2e/strata append --api-url "$api" --flush=false --progress=never "rollout/$store" "$out/batch.jsonl" >/dev/null 2>&1
  sleep 1.3
done

STRATA_E2E_UI="http://127.0.0.1:$ui_port" STRATA_E2E_STORE="$store" STRATA_E2E_OUT="$out" STRATA_CHROMIUM="$chromium" \
  node e2e/temporal-ui.mjs

# The merge finishes once the delayed write completes: every row is still readable, and the
# catalog shows nothing pending.
rows=$(.data/e2e/strata scan --api-url "$api" "rollout/$store" | wc -l)
[ "$rows" = 500 ] || { echo "e2e.sh: expected 500 rows after the merge, read $rows" >&2; exit 1; }
# `strata status` columns: STORE, SHARDS, PENDING GENS, OLDEST PENDING, FRAGMENTS, ...
for _ in $(seq 1 240); do
  .data/e2e/strata status --database-url "$(scripts/pg.sh url)" --prefix "$store" >"$out/status.txt"
  awk -v s="rollout/$store" '$1 == s && $3 == "0" && $5 != "0" { found = 1 } END { exit !found }' "$out/status.txt" && break
  sleep 0.5
done
cat "$out/status.txt"
awk -v s="rollout/$store" '$1 == s && $3 == "0" && $5 != "0" { found = 1 } END { exit !found }' "$out/status.txt" ||
  { echo "e2e.sh: the store was not merged" >&2; exit 1; }

# A merge that fails until its cause is removed: found in the UI, retried through the UI.
touch "$failing_file"
.data/e2e/strata store create --api-url "$api" "rollout/$failing_store"
for i in $(seq 1 20); do echo "{\"id\":\"f$i\",\"rollout_id\":\"e2e\"}"; done >"$out/failing.jsonl"
.data/e2e/strata append --api-url "$api" --progress=never "rollout/$failing_store" "$out/failing.jsonl" >/dev/null
.data/e2e/strata maint --api-url "$api" merge "rollout/$failing_store"
STRATA_E2E_UI="http://127.0.0.1:$ui_port" STRATA_E2E_FAILING_STORE="$failing_store" STRATA_E2E_FAIL_WHILE="$failing_file" \
  STRATA_E2E_OUT="$out" STRATA_CHROMIUM="$chromium" node e2e/temporal-ui-retry.mjs
.data/e2e/strata status --database-url "$(scripts/pg.sh url)" --prefix "$failing_store" >"$out/failing-status.txt"
cat "$out/failing-status.txt"
awk -v s="rollout/$failing_store" '$1 == s && $3 == "0" && $5 != "0" { found = 1 } END { exit !found }' "$out/failing-status.txt" ||
  { echo "e2e.sh: the failing store was not merged after the retry" >&2; exit 1; }
.data/e2e/strata status --database-url "$(scripts/pg.sh url)" --failing | tee "$out/failing-list.txt"
grep -q "no failing maintenance" "$out/failing-list.txt" || { echo "e2e.sh: a failure is still listed" >&2; exit 1; }
# The Strata UI: a store found by name, its rows filtered, a record and its blob, an SQL query,
# and a merge started from the page.
ui_store=e2e-ui-$(date +%s)
.data/e2e/strata store create --api-url "$api" "rollout/$ui_store"
{
  for i in $(seq 1 40); do echo "{\"id\":\"r$i\",\"rollout_id\":\"e2e-$([ $((i % 2)) = 0 ] && echo b || echo a)\",\"content\":\"row $i\"}"; done
  echo "{\"id\":\"r-blob\",\"rollout_id\":\"e2e-blob\",\"role\":\"artifact\",\"binary_payload\":\"$(printf 'blob bytes from e2e' | base64)\"}"
} >"$out/ui.jsonl"
.data/e2e/strata append --api-url "$api" --progress=never "rollout/$ui_store" "$out/ui.jsonl" >/dev/null
STRATA_E2E_API="$api" STRATA_E2E_UI_STORE="$ui_store" STRATA_E2E_OUT="$out" STRATA_CHROMIUM="$chromium" node e2e/strata-ui.mjs
echo "e2e.sh: browser check passed; screenshots in $out"
