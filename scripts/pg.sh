#!/usr/bin/env bash
# Owns the lifecycle of a throwaway PostgreSQL cluster built from the machine's own server
# binaries (/usr/lib/postgresql/*/bin). Idempotent: start reuses a server already answering on the
# port; stop only stops the cluster in the given directory.
#
#   scripts/pg.sh start|stop|status|url
#   env: STRATA_PG_DIR (default .data/pg), STRATA_PG_PORT (default 5433), STRATA_PG_DB (default strata)
#
# As root the cluster runs as the postgres user (initdb refuses root), as anyone else as that user.
set -euo pipefail

cmd=${1:-}
dir=${STRATA_PG_DIR:-.data/pg}
port=${STRATA_PG_PORT:-5433}
db=${STRATA_PG_DB:-strata}
mkdir -p "$(dirname "$dir")"
dir=$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")
url="postgres://postgres@127.0.0.1:${port}/${db}?sslmode=disable"

die() { echo "pg.sh: $*" >&2; exit 1; }

find_bindir() {
  if [ -n "${STRATA_PG_BINDIR:-}" ]; then echo "$STRATA_PG_BINDIR"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
  d=$(dirname "$(command -v initdb 2>/dev/null || true)")
  [ -x "$d/initdb" ] && { echo "$d"; return; }
  die "no PostgreSQL server binaries found (looked in /usr/lib/postgresql/*/bin and PATH); install postgresql or set STRATA_PG_BINDIR"
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

ready() { "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" >/dev/null 2>&1; }

ensure_db() {
  local exists
  exists=$(as_pg "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atc \
    "SELECT 1 FROM pg_database WHERE datname = '$db'" 2>/dev/null || true)
  if [ "$exists" != 1 ]; then
    as_pg "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qc "CREATE DATABASE \"$db\"" >/dev/null 2>&1 ||
      [ "$(as_pg "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = '$db'")" = 1 ] ||
      die "could not create database $db on port $port"
  fi
}

bindir=$(find_bindir)

case "$cmd" in
start)
  if ready; then
    ensure_db
    echo "pg.sh: reusing PostgreSQL already running on 127.0.0.1:$port"
    exit 0
  fi
  if [ ! -f "$dir/PG_VERSION" ]; then
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    chmod 700 "$dir"
    as_pg "$bindir/initdb" -D "$dir" --auth=trust -U postgres --encoding=UTF8 --locale=C.UTF-8 >"$dir.initdb.log" 2>&1 ||
      { cat "$dir.initdb.log" >&2; die "initdb failed in $dir"; }
  fi
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$dir"
  if ! as_pg "$bindir/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 30 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null; then
    tail -n 20 "$dir/server.log" >&2 || true
    die "PostgreSQL did not start on 127.0.0.1:$port (is the port taken by something else? log: $dir/server.log)"
  fi
  for _ in $(seq 1 60); do ready && break; sleep 0.5; done
  ready || die "PostgreSQL started but does not answer on 127.0.0.1:$port"
  ensure_db
  echo "pg.sh: PostgreSQL up on 127.0.0.1:$port (data $dir)"
  ;;
stop)
  if [ -f "$dir/postmaster.pid" ]; then
    as_pg "$bindir/pg_ctl" -D "$dir" -m fast -w -t 30 stop >/dev/null 2>&1 || true
    echo "pg.sh: stopped PostgreSQL in $dir"
  fi
  ;;
status)
  ready && echo "up $url" || { echo "down"; exit 1; }
  ;;
url)
  echo "$url"
  ;;
*)
  die "usage: scripts/pg.sh start|stop|status|url"
  ;;
esac
