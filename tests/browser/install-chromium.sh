#!/usr/bin/env bash
# Installs Debian's Chromium and its chromedriver for the browser tests, once.
# Idempotent: does nothing when both are already on PATH. Needs root and apt (as CI has).
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-chromium: chromium and chromedriver are missing; run as root or" \
         "'apt-get install chromium chromium-driver'" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
