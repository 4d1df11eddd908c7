#!/usr/bin/env bash
# `make tools`: installs a pinned tool once per machine and user, in a cache outside the clone,
# and links it into the clone, so a fresh clone (CI runs one every time) reuses what an earlier
# one installed instead of linking Go binaries and unpacking npm packages again.
#
#   scripts/install-tool.sh go <binary> <module>@<version>   → bin/<binary>
#   scripts/install-tool.sh npm <dir>                        → <dir>/node_modules (npm ci of its lock file)
#
# The cache is $STRATA_TOOLS_CACHE, else $XDG_CACHE_HOME/strata-tools, else ~/.cache/strata-tools,
# else the clone's .data/tools when none of them can be written. An entry is keyed by what pins it
# (the module version; the lock file's hash) and installed into a temporary directory renamed
# into place, so two clones installing at once both end with a whole one.
set -euo pipefail
cd "$(dirname "$0")/.."

cache_dir() {
  local d
  for d in "${STRATA_TOOLS_CACHE:-}" "${XDG_CACHE_HOME:+$XDG_CACHE_HOME/strata-tools}" "${HOME:+$HOME/.cache/strata-tools}" "$PWD/.data/tools"; do
    if [ -n "$d" ] && mkdir -p "$d" 2>/dev/null && [ -w "$d" ]; then
      echo "$d"
      return
    fi
  done
  echo "install-tool.sh: no writable tools cache" >&2
  exit 1
}

# publish <tmp> <entry>: renames tmp to entry unless another install got there first (whose
# entry is then used).
publish() {
  mkdir -p "$(dirname "$2")"
  if ! mv -T "$1" "$2" 2>/dev/null; then
    rm -rf "$1"
    [ -e "$2" ] || { echo "install-tool.sh: could not install $2" >&2; exit 1; }
  fi
}

cache=$(cache_dir)
case $1 in
go)
  name=$2 spec=$3
  entry="$cache/go/${spec//\//_}"
  if [ ! -x "$entry/$name" ]; then
    rm -rf "$entry" # incomplete or damaged
    echo "installing $spec into $entry (a few minutes the first time)"
    tmp=$(mktemp -d "$cache/.tmp.XXXXXX") && chmod 755 "$tmp"
    GOBIN="$tmp" "${GO:-go}" install "$spec"
    publish "$tmp" "$entry"
  fi
  mkdir -p bin
  ln -f "$entry/$name" "bin/$name" 2>/dev/null || cp -f "$entry/$name" "bin/$name"
  ;;
npm)
  dir=$2
  hash=$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -c1-16)
  entry="$cache/npm/$(basename "$dir")-$hash"
  if [ ! -f "$entry/.complete" ]; then
    echo "installing $dir's packages into $entry with npm ci (a minute or two the first time)"
    tmp=$(mktemp -d "$cache/.tmp.XXXXXX") && chmod 755 "$tmp"
    cp "$dir/package.json" "$dir/package-lock.json" "$tmp/"
    (cd "$tmp" && { npm ci --no-audit --no-fund --loglevel=error ||
      { echo "npm ci failed (above); trying once more" >&2; npm ci --no-audit --no-fund --loglevel=error; }; })
    touch "$tmp/.complete" # written last: an entry without it is incomplete or damaged
    [ -f "$entry/.complete" ] || rm -rf "$entry"
    publish "$tmp" "$entry"
  fi
  rm -rf "$dir/node_modules"
  ln -s "$entry/node_modules" "$dir/node_modules"
  ;;
*)
  echo "usage: $0 go <binary> <module>@<version> | npm <dir>" >&2
  exit 2
  ;;
esac
