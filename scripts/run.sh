#!/usr/bin/env bash
# `make run`: the local stack in the foreground. Starts PostgreSQL (.data/pg) and the Temporal dev
# server (.data/temporal.db, Web UI :8233) unless they already run (then they are reused and left
# running), then `strata dev` (API :3000 + maintenance worker + schedules). Ctrl-C stops strata
# and every service this script started; data stays in .data/ for the next run.
#
#   env: STRATA_LISTEN_ADDR (127.0.0.1:3000), STRATA_BIN (bin/strata), any STRATA_* flag of
#        `strata dev`, and the pg.sh / temporal.sh / s3.sh / azurite.sh / fake-gcs.sh variables.
#        S3=1 (`make run S3=1`): also start a local S3 server (versitygw over .data/s3) and keep
#        every store in it. AZURE=1 likewise with Azurite (.data/azurite, container "strata"),
#        GCS=1 with fake-gcs-server (.data/gcs, bucket "strata"); one of the three at most.
set -euo pipefail
cd "$(dirname "$0")/.."

listen=${STRATA_LISTEN_ADDR:-127.0.0.1:3000}
started=()
strata_started=
cleanup() {
  trap - INT TERM EXIT
  [ -n "${strata_pid:-}" ] && kill -TERM "$strata_pid" 2>/dev/null && wait "$strata_pid" 2>/dev/null || true
  for svc in "${started[@]}"; do
    "scripts/$svc.sh" stop || true
  done
  if [ -n "$strata_started" ]; then
    echo "run.sh: stopped strata${started[*]:+ and ${started[*]}}"
  elif [ ${#started[@]} -gt 0 ]; then
    echo "run.sh: stopped ${started[*]}"
  fi
  return 0
}
trap cleanup INT TERM EXIT

# The API port must be free: a second `make run` fails here instead of half-starting.
if (exec 3<>"/dev/tcp/${listen%:*}/${listen##*:}") 2>/dev/null; then
  echo "run.sh: $listen is already in use (another 'make run' or 'strata dev'?); stop it or set STRATA_LISTEN_ADDR" >&2
  exit 1
fi
services=(pg temporal)
store=
for kind in S3 AZURE GCS; do
  [ "${!kind:-}" = 1 ] || continue
  if [ -n "$store" ]; then
    echo "run.sh: $store=1 and $kind=1: choose one object store" >&2
    exit 1
  fi
  store=$kind
done
case "$store" in
S3) services+=(s3) ;;
AZURE) services+=(azurite) ;;
GCS) services+=(fake-gcs) ;;
esac
for svc in "${services[@]}"; do
  if "scripts/$svc.sh" status >/dev/null 2>&1; then
    echo "run.sh: reusing the $svc server already running"
  else
    if ! "scripts/$svc.sh" start; then
      echo "run.sh: could not start $svc (see the message above); strata was not started" >&2
      exit 1
    fi
    started+=("$svc")
  fi
done

export STRATA_DATABASE_URL=${STRATA_DATABASE_URL:-$(scripts/pg.sh url)}
export STRATA_TEMPORAL_ADDRESS=${STRATA_TEMPORAL_ADDRESS:-127.0.0.1:${STRATA_TEMPORAL_PORT:-7233}}
export STRATA_TEMPORAL_UI_URL=${STRATA_TEMPORAL_UI_URL:-http://127.0.0.1:${STRATA_TEMPORAL_UI_PORT:-8233}}
export STRATA_LISTEN_ADDR=$listen
if [ -n "$store" ]; then
  svc=${services[-1]}
  eval "$("scripts/$svc.sh" env)"
  export STRATA_DATA_URL=${STRATA_DATA_URL:-$("scripts/$svc.sh" url)}
  if [ "$store" != S3 ]; then
    # Strata never creates a container or bucket; on the emulator this script does.
    "${GO:-go}" run ./internal/emulators/makebucket "$("scripts/$svc.sh" url)" || exit 1
  fi
  echo "run.sh: stores live in $STRATA_DATA_URL"
fi
"${STRATA_BIN:-bin/strata}" dev &
strata_pid=$!
strata_started=1
wait "$strata_pid" || true
strata_pid=
