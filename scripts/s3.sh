#!/usr/bin/env bash
# Owns the lifecycle of a local S3 server: versitygw (Apache-2.0; bin/versitygw, installed by
# `make tools`) serving a directory over the S3 API. Idempotent like pg.sh and temporal.sh: start
# reuses a server already listening on the port; stop only stops the server it started (pid file
# next to the data directory). A bucket is a directory of the served one, so start creates it
# with mkdir.
#
#   scripts/s3.sh start|stop|status|url|env
#     url: the store URL of the bucket (s3://<bucket>?endpoint=...&path_style=true&region=...)
#     env: export lines for the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)
#   env: STRATA_S3_PORT (7070), STRATA_S3_DIR (.data/s3), STRATA_S3_BUCKET (strata),
#        STRATA_S3_BIN (bin/versitygw), STRATA_S3_ACCESS_KEY, STRATA_S3_SECRET_KEY
set -euo pipefail

cmd=${1:-}
port=${STRATA_S3_PORT:-7070}
dir=${STRATA_S3_DIR:-.data/s3}
bucket=${STRATA_S3_BUCKET:-strata}
bin=${STRATA_S3_BIN:-bin/versitygw}
access=${STRATA_S3_ACCESS_KEY:-strata-local}
secret=${STRATA_S3_SECRET_KEY:-strata-local-secret}
pidfile="$dir.pid"
logfile="$dir.log"

die() { echo "s3.sh: $*" >&2; exit 1; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
need_bin() { [ -x "$bin" ] || die "$bin not found; run 'make tools' first"; }

case "$cmd" in
start)
  need_bin
  mkdir -p "$dir/$bucket"
  if listening; then
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "s3.sh: reusing versitygw already running on 127.0.0.1:$port"
      exit 0
    fi
    die "port $port is taken by something this script did not start"
  fi
  ROOT_ACCESS_KEY="$access" ROOT_SECRET_KEY="$secret" setsid nohup "$bin" --port "127.0.0.1:$port" posix "$dir" \
    >"$logfile" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 1 80); do
    listening && { echo "s3.sh: versitygw up on 127.0.0.1:$port (bucket $bucket in $dir)"; exit 0; }
    kill -0 "$(cat "$pidfile")" 2>/dev/null || break
    sleep 0.25
  done
  tail -n 20 "$logfile" >&2 || true
  die "versitygw did not start on 127.0.0.1:$port (log: $logfile)"
  ;;
stop)
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$pid" 2>/dev/null || true
      echo "s3.sh: stopped versitygw (pid $pid)"
    fi
    rm -f "$pidfile"
  fi
  ;;
status)
  listening && echo "up 127.0.0.1:$port" || { echo "down"; exit 1; }
  ;;
url)
  echo "s3://$bucket?endpoint=http://127.0.0.1:$port&path_style=true&region=us-east-1"
  ;;
env)
  echo "export AWS_ACCESS_KEY_ID=$access AWS_SECRET_ACCESS_KEY=$secret"
  ;;
*)
  die "usage: scripts/s3.sh start|stop|status|url|env"
  ;;
esac
