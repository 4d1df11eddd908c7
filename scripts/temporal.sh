#!/usr/bin/env bash
# Owns the lifecycle of the Temporal dev server (bin/temporal, installed by `make tools`).
# Idempotent: start reuses a server already healthy on the port; stop only stops the server it
# started (pid file next to the database file). The dev server's SQLite runs in WAL mode with
# synchronous=normal: safe against process crashes, one fsync per checkpoint instead of one per
# transaction (a development server; production Temporal runs on its own database).
#
#   scripts/temporal.sh start|stop|status
#   env: STRATA_TEMPORAL_PORT (7233), STRATA_TEMPORAL_UI_PORT (8233),
#        STRATA_TEMPORAL_DB (.data/temporal.db), STRATA_TEMPORAL_BIN (bin/temporal)
set -euo pipefail

cmd=${1:-}
port=${STRATA_TEMPORAL_PORT:-7233}
ui_port=${STRATA_TEMPORAL_UI_PORT:-8233}
db=${STRATA_TEMPORAL_DB:-.data/temporal.db}
bin=${STRATA_TEMPORAL_BIN:-bin/temporal}
mkdir -p "$(dirname "$db")"
pidfile="$db.pid"
logfile="$db.log"

die() { echo "temporal.sh: $*" >&2; exit 1; }
healthy() { "$bin" operator cluster health --address "127.0.0.1:$port" >/dev/null 2>&1; }

need_bin() { [ -x "$bin" ] || die "$bin not found; run 'make tools' first"; }

case "$cmd" in
start)
  need_bin
  if healthy; then
    echo "temporal.sh: reusing Temporal already running on 127.0.0.1:$port"
    exit 0
  fi
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    die "port $port is taken by something that is not a healthy Temporal server"
  fi
  setsid nohup "$bin" server start-dev --ip 127.0.0.1 --port "$port" --ui-port "$ui_port" \
    --db-filename "$db" --log-level warn \
    --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal >"$logfile" 2>&1 < /dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 1 120); do
    healthy && { echo "temporal.sh: Temporal up on 127.0.0.1:$port, Web UI http://127.0.0.1:$ui_port"; exit 0; }
    kill -0 "$(cat "$pidfile")" 2>/dev/null || break
    sleep 0.25
  done
  tail -n 20 "$logfile" >&2 || true
  die "Temporal dev server did not become healthy on 127.0.0.1:$port (log: $logfile)"
  ;;
stop)
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$pid" 2>/dev/null || true
      echo "temporal.sh: stopped Temporal (pid $pid)"
    fi
    rm -f "$pidfile"
  fi
  ;;
status)
  need_bin
  healthy && echo "up 127.0.0.1:$port" || { echo "down"; exit 1; }
  ;;
*)
  die "usage: scripts/temporal.sh start|stop|status"
  ;;
esac
