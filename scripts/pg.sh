#!/usr/bin/env bash
# Owns the lifecycle of a throwaway PostgreSQL cluster built from the machine's own server
# binaries (/usr/lib/postgresql/*/bin). Idempotent: start reuses a server already answering on the
# port; stop only stops the cluster in the given directory.
#
#   scripts/pg.sh start|stop|status|url
#   env: STRATA_PG_DIR (default .data/pg), STRATA_PG_PORT (default 5433), STRATA_PG_DB (default strata)
#
# As root the cluster runs as the postgres user (initdb refuses root), as anyone else as that user.
# The postgres user must be able to reach the data directory: when the repository sits under a
# directory it cannot traverse (a clone in /root, mode 0700), the cluster lives in
# /var/tmp/strata-pg-<hash of the directory> instead and STRATA_PG_DIR becomes a symlink to it.
# Missing server binaries are installed (Debian's postgresql) when running as root.
set -euo pipefail

cmd=${1:-}
dir=${STRATA_PG_DIR:-.data/pg}
port=${STRATA_PG_PORT:-5433}
db=${STRATA_PG_DB:-strata}
mkdir -p "$(dirname "$dir")"
dir=$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")
url="postgres://postgres@127.0.0.1:${port}/${db}?sslmode=disable"

die() { echo "pg.sh: $*" >&2; exit 1; }

lookup_bindir() {
  if [ -n "${STRATA_PG_BINDIR:-}" ]; then echo "$STRATA_PG_BINDIR"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
  d=$(dirname "$(command -v initdb 2>/dev/null || true)")
  [ -x "$d/initdb" ] && { echo "$d"; return; }
  return 1
}

find_bindir() {
  local d
  if d=$(lookup_bindir); then echo "$d"; return; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && [ -z "${STRATA_PG_BINDIR:-}" ]; then
    echo "pg.sh: no PostgreSQL server binaries; installing Debian's postgresql (as root)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; } >&2 ||
      die "installing postgresql failed; install it yourself (apt-get install postgresql) or set STRATA_PG_BINDIR"
    if d=$(lookup_bindir); then echo "$d"; return; fi
  fi
  die "no PostgreSQL server binaries found (looked in /usr/lib/postgresql/*/bin and PATH); install them (Debian: sudo apt-get install postgresql) or set STRATA_PG_BINDIR"
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# pgdata: where the cluster really lives (see the header). As root, a directory the postgres user
# cannot reach is replaced by a symlink to one it can.
pgdata=$dir
if [ "$(id -u)" = 0 ]; then
  if [ -L "$dir" ]; then
    pgdata=$(readlink -f "$dir")
  elif ! runuser -u postgres -- test -x "$(dirname "$dir")" 2>/dev/null && [ ! -f "$dir/PG_VERSION" ]; then
    pgdata=/var/tmp/strata-pg-$(printf '%s' "$dir" | sha256sum | cut -c1-16)
  fi
fi

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
  if [ ! -f "$pgdata/PG_VERSION" ]; then
    mkdir -p "$pgdata"
    if [ "$pgdata" != "$dir" ]; then
      echo "pg.sh: the postgres user cannot reach $(dirname "$dir"); the cluster lives in $pgdata ($dir links to it)"
      ln -sfn "$pgdata" "$dir"
    fi
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$pgdata"
    chmod 700 "$pgdata"
    as_pg "$bindir/initdb" -D "$pgdata" --auth=trust -U postgres --encoding=UTF8 --locale=C.UTF-8 >"$dir.initdb.log" 2>&1 ||
      { cat "$dir.initdb.log" >&2; die "initdb failed in $pgdata (log: $dir.initdb.log)"; }
  fi
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$pgdata"
  if ! as_pg "$bindir/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w -t 30 \
      -o "-p $port -k $pgdata -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null; then
    tail -n 20 "$pgdata/server.log" >&2 || true
    die "PostgreSQL did not start on 127.0.0.1:$port (is the port taken by something else? set STRATA_PG_PORT; log: $pgdata/server.log)"
  fi
  for _ in $(seq 1 60); do ready && break; sleep 0.5; done
  ready || die "PostgreSQL started but does not answer on 127.0.0.1:$port"
  ensure_db
  echo "pg.sh: PostgreSQL up on 127.0.0.1:$port (data $pgdata)"
  ;;
stop)
  if [ -f "$pgdata/postmaster.pid" ]; then
    as_pg "$bindir/pg_ctl" -D "$pgdata" -m fast -w -t 30 stop >/dev/null 2>&1 || true
    echo "pg.sh: stopped PostgreSQL in $pgdata"
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
