#!/usr/bin/env bash
# Writes docker/.env (read by docker-compose.yml) with freshly generated tokens and passwords,
# unless it exists already. The file is the cluster's secrets: keep it out of version control
# (it is ignored) and readable by you alone.
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
env="$dir/.env"
if [ -e "$env" ]; then
  echo "gen-env.sh: $env exists; remove it to generate new secrets" >&2
  exit 0
fi
secret() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
umask 077
{
  echo "STRATA_API_TOKEN=$(secret)"
  echo "STRATA_ADMIN_TOKEN=$(secret)"
  echo "POSTGRES_PASSWORD=$(secret)"
  echo "S3_SECRET_KEY=$(secret)"
  echo "GRAFANA_ADMIN_PASSWORD=$(secret)"
} > "$env"
echo "gen-env.sh: wrote $env (API token: STRATA_API_TOKEN in it)"
