#!/bin/sh
# The gateway benchmark's load generator and reference server, from Debian's packages:
# wrk (bounded HTTP load) and nginx (the same bytes served from files, and the shipped edge,
# which needs its auth_request, proxy_cache and gzip modules, and its embedded Perl).
# Installs only what is missing; needs root (or sudo) and apt-get.
set -eu
missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx"
[ -f /usr/lib/nginx/modules/ngx_http_perl_module.so ] || missing="$missing libnginx-mod-http-perl"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
        echo "bench: needs$missing; run as root or install them" >&2; exit 1
    fi
else
    SUDO=""
fi
echo "bench: installing$missing from Debian's packages" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
