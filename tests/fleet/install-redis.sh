#!/usr/bin/env bash
# Installs Debian's redis-server for the fleet tests (tests/fleet/test_redis.py), once.
# Idempotent: does nothing when redis-server is already on PATH. Needs root and apt (as CI has).
set -euo pipefail
if command -v redis-server >/dev/null; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-redis: redis-server is missing; run as root or" \
         "'apt-get install redis-server'" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends redis-server >/dev/null
