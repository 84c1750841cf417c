#!/usr/bin/env bash
# Installs Debian's nginx for the edge tests (tests/edge/), once: the shipped edge needs its
# auth_request, proxy_cache and gzip modules, all in Debian's `nginx` package, and its embedded
# Perl (`libnginx-mod-http-perl`), which hashes the answers nginx writes itself.
# Idempotent: does nothing when both are installed. Needs root and apt (as CI has).
set -euo pipefail
PERL_MODULE=/usr/lib/nginx/modules/ngx_http_perl_module.so  # what the edge's config loads
if { command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; } && [ -f "$PERL_MODULE" ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-nginx: nginx or its Perl module is missing; run as root or" \
        "'apt-get install nginx libnginx-mod-http-perl'" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends nginx libnginx-mod-http-perl >/dev/null
