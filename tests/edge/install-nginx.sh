#!/usr/bin/env bash
# Installs Debian's nginx for the edge tests (tests/edge/), once: the shipped edge needs its
# auth_request, proxy_cache and gzip modules, all in Debian's `nginx` package.
# Idempotent: does nothing when nginx is already installed. Needs root and apt (as CI has).
set -euo pipefail
if command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-nginx: nginx is missing; run as root or 'apt-get install nginx'" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends nginx >/dev/null
