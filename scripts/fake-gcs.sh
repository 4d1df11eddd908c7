#!/usr/bin/env bash
# Owns the lifecycle of a local GCS API: fake-gcs-server (BSD-2-Clause; bin/fake-gcs-server,
# installed by `make tools`) over a directory. Idempotent like s3.sh: start reuses a server
# already listening on the port; stop only stops the one it started (pid file next to the data
# directory). The tests create their bucket over the JSON API (testenv.GCS).
#
#   scripts/fake-gcs.sh start|stop|status|url|env
#     url: the store URL of the test bucket (gs://<bucket>)
#     env: export line for STORAGE_EMULATOR_HOST (the SDK's emulator address; no credentials)
#   env: STRATA_GCS_PORT (4443), STRATA_GCS_DIR (.data/gcs), STRATA_GCS_BUCKET (strata),
#        STRATA_GCS_BIN (bin/fake-gcs-server), STRATA_GCS_BACKEND (filesystem, or memory: nothing
#        kept across restarts)
set -euo pipefail

cmd=${1:-}
port=${STRATA_GCS_PORT:-4443}
dir=${STRATA_GCS_DIR:-.data/gcs}
bucket=${STRATA_GCS_BUCKET:-strata}
bin=${STRATA_GCS_BIN:-bin/fake-gcs-server}
# The tests keep objects in memory: the emulator's filesystem backend lists a whole bucket for
# every listing and takes ~20 ms a write, which made the suites several times slower than on S3.
case "${STRATA_GCS_BACKEND:-filesystem}" in
memory) backend=(-backend memory) ;;
filesystem) backend=(-backend filesystem -filesystem-root "$dir") ;;
*) echo "fake-gcs.sh: STRATA_GCS_BACKEND is memory or filesystem" >&2; exit 1 ;;
esac
pidfile="$dir.pid"
logfile="$dir.log"

die() { echo "fake-gcs.sh: $*" >&2; exit 1; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
need_bin() { [ -x "$bin" ] || die "$bin not found; run 'make tools' first"; }

case "$cmd" in
start)
  need_bin
  mkdir -p "$dir"
  if listening; then
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "fake-gcs.sh: reusing fake-gcs-server already running on 127.0.0.1:$port"
      exit 0
    fi
    die "port $port is taken by something this script did not start"
  fi
  setsid nohup "$bin" -scheme http -host 127.0.0.1 -port "$port" -public-host "127.0.0.1:$port" \
    "${backend[@]}" -log-level error >"$logfile" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 1 80); do
    listening && { echo "fake-gcs.sh: fake-gcs-server up on 127.0.0.1:$port (${backend[*]})"; exit 0; }
    kill -0 "$(cat "$pidfile")" 2>/dev/null || break
    sleep 0.25
  done
  tail -n 20 "$logfile" >&2 || true
  die "fake-gcs-server did not start on 127.0.0.1:$port (log: $logfile)"
  ;;
stop)
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$pid" 2>/dev/null || true
      echo "fake-gcs.sh: stopped fake-gcs-server (pid $pid)"
    fi
    rm -f "$pidfile"
  fi
  ;;
status)
  listening && echo "up 127.0.0.1:$port" || { echo "down"; exit 1; }
  ;;
url)
  echo "gs://$bucket"
  ;;
env)
  echo "export STORAGE_EMULATOR_HOST=127.0.0.1:$port"
  ;;
*)
  die "usage: scripts/fake-gcs.sh start|stop|status|url|env"
  ;;
esac
