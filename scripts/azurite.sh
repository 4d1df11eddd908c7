#!/usr/bin/env bash
# Owns the lifecycle of a local Azure Blob service: Azurite's blob service (npm package azurite,
# MIT; tools/azurite, installed by `make tools`) over a directory. Idempotent like s3.sh: start
# reuses an emulator already listening on the port; stop only stops the one it started (pid file
# next to the data directory). Its account is Azurite's public development account; the tests
# create their container through the SDK (testenv.Azure).
#
#   scripts/azurite.sh start|stop|status|url|env
#     url: the store URL of the test container (az://<container>)
#     env: export line for AZURE_STORAGE_CONNECTION_STRING
#   env: STRATA_AZURITE_PORT (10000), STRATA_AZURITE_DIR (.data/azurite),
#        STRATA_AZURITE_CONTAINER (strata), STRATA_AZURITE_BIN (tools/azurite/node_modules/.bin/azurite-blob)
set -euo pipefail

cmd=${1:-}
port=${STRATA_AZURITE_PORT:-10000}
dir=${STRATA_AZURITE_DIR:-.data/azurite}
container=${STRATA_AZURITE_CONTAINER:-strata}
bin=${STRATA_AZURITE_BIN:-tools/azurite/node_modules/.bin/azurite-blob}
# STRATA_AZURITE_IN_MEMORY=1 (the tests): blobs are kept in memory only, which makes the
# emulator's writes several times faster; nothing survives a restart.
account=devstoreaccount1
key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
pidfile="$dir.pid"
logfile="$dir.log"

die() { echo "azurite.sh: $*" >&2; exit 1; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
need_bin() { [ -x "$bin" ] || die "$bin not found; run 'make tools' first"; }

case "$cmd" in
start)
  need_bin
  mkdir -p "$dir"
  if listening; then
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "azurite.sh: reusing Azurite already running on 127.0.0.1:$port"
      exit 0
    fi
    die "port $port is taken by something this script did not start"
  fi
  persistence=(--location "$dir")
  [ "${STRATA_AZURITE_IN_MEMORY:-}" = 1 ] && persistence=(--inMemoryPersistence)
  setsid nohup "$bin" --blobHost 127.0.0.1 --blobPort "$port" "${persistence[@]}" --silent \
    --skipApiVersionCheck --loose --disableTelemetry >"$logfile" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 1 120); do
    listening && { echo "azurite.sh: Azurite up on 127.0.0.1:$port (${persistence[*]})"; exit 0; }
    kill -0 "$(cat "$pidfile")" 2>/dev/null || break
    sleep 0.25
  done
  tail -n 20 "$logfile" >&2 || true
  die "Azurite did not start on 127.0.0.1:$port (log: $logfile)"
  ;;
stop)
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$pid" 2>/dev/null || true
      echo "azurite.sh: stopped Azurite (pid $pid)"
    fi
    rm -f "$pidfile"
  fi
  ;;
status)
  listening && echo "up 127.0.0.1:$port" || { echo "down"; exit 1; }
  ;;
url)
  echo "az://$container"
  ;;
env)
  echo "export AZURE_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=$account;AccountKey=$key;BlobEndpoint=http://127.0.0.1:$port/$account;'"
  ;;
*)
  die "usage: scripts/azurite.sh start|stop|status|url|env"
  ;;
esac
