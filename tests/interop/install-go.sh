#!/usr/bin/env bash
# Installs Debian's Go and golang.org/x/mod (sumdb/note, sumdb/tlog) for the interop test
# (tests/interop/test_go_verifier.py), once. Idempotent: does nothing when both are present.
# Needs root and apt (as CI has).
set -euo pipefail
MOD=/usr/share/gocode/src/golang.org/x/mod/sumdb/tlog
if command -v go >/dev/null && [ -d "$MOD" ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-go: go or golang.org/x/mod is missing; run as root or" \
         "'apt-get install golang-go golang-golang-x-mod-dev'" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends golang-go golang-golang-x-mod-dev >/dev/null
