"""The text of the shipped edge's ``nginx.conf``: its template and the blocks it is made of,
commented line by line (docs/operating/edge.md explains them). ``@@NAME@@`` marks where a block
or a value goes; :func:`gateway.edge.config.edge_config` fills them and checks the values.
"""

from __future__ import annotations

from gateway.edge.maps import MAPS
from gateway.edge.refusals import OWN_BLOCKS

# Pass-through: the client's request as it came, to any gateway; the edge's own headers, if a
# client sent them, are blanked (an empty value is not sent). X-Fxev-Passed, the credential,
# tells a gateway only that the edge took the request, whose head it found within a gateway's
# limit (what the edge adds may take it over: the gateway then allows an edge's longer head).
_STRIP = """\
            proxy_set_header X-Fxev-Passed @@CREDENTIAL@@;
            proxy_set_header X-Fxev-Edge "";
            proxy_set_header X-Fxev-Admitted "";
            proxy_set_header X-Fxev-Expect "";
            proxy_set_header X-Fxev-Answer "";
            proxy_set_header X-Original-URI "";
            proxy_set_header X-Original-Method "";"""
# Passed through, uncached: the gateway checks, counts and records it.
_PASSED = """\
            error_page 502 504 = @fxev_down;
            error_page 400 =400 /_fxev_malformed;  # a body nginx cannot read: as at the server
@@BODY_OVER@@
            add_header X-Cache PASS always;
@@DIGEST@@
@@STRIP@@
@@UPSTREAM_HEADERS@@
            proxy_pass http://fxev_gateways;"""

_UPSTREAM_HEADERS = """\
            proxy_set_header Host $fxev_host;
            proxy_set_header Connection "";
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;"""
_DIGEST = """\
            # A body nginx compresses goes without the gateway's Repr-Digest (it describes the
            # identity body, which the ledger hashes) and says it varies; any other keeps it.
            proxy_hide_header Repr-Digest;
            add_header Repr-Digest $fxev_repr_digest always;
            add_header Vary $fxev_vary always;"""
# Where a 304 comes from the auth step's replay or from the cache: when it stands for a 200
# nginx would compress, that 200's weak ETag (and, by the maps, its Vary). The type of that 200,
# which the replay carries for the maps, is the edge's own.
_VALIDATOR = """\
            proxy_hide_header X-Fxev-Type;
            add_header ETag $fxev_validator;"""

# A location's own error pages replace the server's: a body over client_max_body_size, refused
# once the location is found (413), gets a gateway's answer to it.
_BODY_OVER = """\
            error_page 413 =400 /_fxev_too_large;"""

# In a location that redirects (error_page) to another.
_SECOND_REDIRECT = """\
            # A second redirect may follow the first (a body nginx cannot read after a pass, or
            # the full auth step's refusal after the lane's).
            recursive_error_pages on;"""

TEMPLATE = """\
# fxev's edge: nginx in front of the gateways (docs/operating/edge.md). Made by
# `fxev edge config`. It holds the edge's credential: keep this file private (mode 0600).
# Run it with a prefix of its own: nginx -p /var/lib/fxev-edge -c /etc/fxev/edge.conf
worker_processes auto;
pid nginx.pid;
# nginx's embedded Perl (Debian's libnginx-mod-http-perl), for one thing: the Repr-Digest of the
# answers nginx writes itself ($fxev_own_digest below).
load_module /usr/lib/nginx/modules/ngx_http_perl_module.so;
events { worker_connections 4096; }

http {
    access_log off;
    server_tokens off;
    default_type application/octet-stream;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
    keepalive_requests 100000;
    # A body over a gateway's limit: refused (413), as a gateway refuses it (error_page 413).
    client_max_body_size @@BODY_MAX@@;
    # Cached bodies go from the cache's files to the socket in the kernel. Not with tcp_nopush:
    # together they held back the end of large answers (about 900 requests a second instead of
    # 10,000 for the 108 KB year page, measured; docs/performance.md).
    sendfile on;
    # No ranges: every answer is the whole body the ledger hashed.
    max_ranges 0;

@@OWN_DIGEST@@
    # The gateways. A gateway that fails a connection is left out for 5 s (health by failure);
    # a GET that failed on one is retried once on another (proxy_next_upstream below). Each
    # client (its Authorization, else its address) goes to one gateway while that one answers:
    # gateways mirror a publish each on its own poll, and a client spread over two could see
    # the new revision, then the old one again (DECISIONS 4: dataset_revision never goes back
    # between two requests of a client). The lanes below are hashed alike: the same client's
    # auth step goes to the same host when --lane follows the order of --upstream.
    map $http_authorization $fxev_client {
        "" $remote_addr;
        default $http_authorization;
    }
    upstream fxev_gateways {
        hash $fxev_client;
@@SERVERS@@
        keepalive 64;
    }@@LANE_UPSTREAM@@

    # The cache of immutable answers (as-of /v1/rates, /v1/evidence/ID, /v1/log/...): bounded
    # on disk, kept across restarts (nginx reloads its index from the folder).
    proxy_cache_path @@CACHE_DIR@@ levels=1:2 keys_zone=fxev_cache:16m max_size=@@MAX_SIZE@@
                     inactive=@@INACTIVE@@ use_temp_path=off;

@@MAPS@@

    proxy_http_version 1.1;
    proxy_connect_timeout 2s;
    proxy_read_timeout 30s;
    proxy_send_timeout 30s;
    proxy_next_upstream error timeout;
    proxy_next_upstream_tries 2;
    proxy_next_upstream_timeout 10s;
    # Slow clients are nginx's: answers are buffered, the gateways freed at once.
    proxy_buffering on;
    proxy_buffers 16 16k;
    proxy_buffer_size 32k;

    server {
        listen @@LISTEN@@;
        # What nginx refuses by itself, before any gateway sees it (a malformed request line,
        # header or percent-escape, a header it takes once sent twice, a head over its buffers,
        # a transfer coding it does not know, an HTTP version it does not speak, TRACE): the
        # API's error body, as a gateway answers such a request, with a fresh
        # request id; no gateway saw it, so no ledger holds it. (A URI, not a named location:
        # nginx cannot name one for a request whose target it could not parse.)
        error_page 400 501 505 =400 /_fxev_malformed;
        error_page 405 =405 /_fxev_not_allowed;
        # ... and a request over a gateway's size limits: a request line or a header line
        # over nginx's buffers (414, 494), a head over the gateway's limit (below), a body
        # over client_max_body_size (413).
        error_page 413 414 494 =400 /_fxev_too_large;
        # ... where they go on to a gateway, and, if none answers, to nginx's own text: a
        # second redirect after the first.
        recursive_error_pages on;
        if ($fxev_head_too_large) { return 494; }
        if ($fxev_bad_head) { return 400; }

        # /v1/rates with as_of_revision (GET or HEAD): an immutable answer; without it, passed.
        # Passed too: If-Match, If-Unmodified-Since or If-Modified-Since, which the gateways
        # ignore, and which nginx would answer itself for an answer its cache holds (its own
        # 412, or a 200 where If-None-Match matches: RFC 9110 13.1.3 has it ignore the date).
        location = /v1/rates {
            error_page 418 = @fxev_pass;
@@SECOND_REDIRECT@@
@@BODY_OVER@@
            if ($fxev_as_of = 0) { return 418; }
            if ($fxev_preconditioned) { return 418; }
            if ($fxev_with_body) { return 418; }
@@IMMUTABLE@@
        }
        location ~ ^/v1/evidence/[^/]*$ {
            error_page 418 = @fxev_pass;
@@SECOND_REDIRECT@@
@@BODY_OVER@@
            if ($request_method !~ ^(GET|HEAD)$) { return 418; }
            if ($fxev_preconditioned) { return 418; }
            if ($fxev_with_body) { return 418; }
@@IMMUTABLE@@
        }
        # The transparency log: public; tiles, entry bundles and rows lists cached, no token to
        # check, a fresh X-Request-Id. Passed as the as-of pages are: requests with another
        # precondition than If-None-Match, and requests with a body.
        location /v1/log/ {
            error_page 418 = @fxev_pass;
@@SECOND_REDIRECT@@
@@BODY_OVER@@
            if ($fxev_preconditioned) { return 418; }
            if ($fxev_with_body) { return 418; }
            proxy_cache fxev_cache;
            proxy_cache_key "log $request_uri";
            proxy_cache_lock on;
            # A browser's request (it sends Origin) is a gateway's to answer, never kept: the
            # CORS headers it gets are those of the gateways' FXEV_CORS_ORIGINS of the moment,
            # which the edge cannot see (the checked routes learn them from the auth step).
            proxy_cache_bypass $http_origin;
            proxy_no_cache $http_origin;
            # Kept a minute, then fetched again, whatever the year the gateway allows: the bytes
            # of a path change only for a tree of another registry (fxev build --rebuild), and
            # its headers with FXEV_CORS_ORIGINS (Vary: Origin); neither outlives a minute here.
            proxy_cache_valid 200 1m;
            proxy_ignore_headers Cache-Control Expires;
            # No gateway answers: a tile kept here is served as it was (X-Cache: STALE, a
            # request id of the edge's), anything else gets the edge's 503 with the API's body.
            proxy_cache_use_stale error timeout http_502 http_504;
            error_page 502 504 = @fxev_down;
            proxy_hide_header X-Request-Id;
            add_header X-Request-Id $fxev_log_request_id always;
            add_header X-Cache $upstream_cache_status always;
@@DIGEST@@
@@VALIDATOR@@
@@STRIP@@
@@UPSTREAM_HEADERS@@
            proxy_pass http://fxev_gateways;
        }
        # The log's folder without its slash: passed, for the gateway's 404 (a prefix location
        # ending in a slash would have nginx answer it with its own 301 to the folder).
        location = /v1/log {
@@PASSED@@
        }
        # The checkpoint and the log key: passed, as the gateway says them at this moment (no
        # copy kept here a few seconds older than its Date says).
        location = /v1/log/checkpoint {
@@PASSED@@
        }
        location = /v1/log/key {
@@PASSED@@
        }
        # Everything else: to a gateway as it came; the gateway checks, counts and records it.
        location / {
@@PASSED@@
        }
        location @fxev_pass {
@@PASSED@@
        }

        # The auth step: the client's request, as a bodiless GET to a gateway's internal route,
        # which checks the token, counts it, records it in the ledger and answers 200 (cache
        # it: X-Request-Id, X-Fxev-Etag) or 401 (anything else, carried whole in X-Fxev-Answer).
        location = /_fxev_auth {
            internal;
            error_page 404 = @fxev_pass;  # asked from outside: the gateway's own 404
            proxy_pass http://fxev_gateways@@AUTH_PATH@@;
@@AUTH_HEADERS@@
        }@@LANE_LOCATIONS@@
        # A refused (or 304) auth step: the gateway sends back the answer it carried, as it was.
        location @fxev_answer {
            rewrite ^ @@ANSWER_PATH@@? break;
            add_header X-Cache PASS always;
@@DIGEST@@
@@VALIDATOR@@
            proxy_set_header X-Fxev-Edge @@CREDENTIAL@@;
            proxy_set_header X-Fxev-Answer $fxev_answer;
            proxy_set_header X-Fxev-Admitted "";
            proxy_set_header X-Fxev-Expect "";
            proxy_set_header X-Original-URI "";
            proxy_set_header X-Original-Method "";
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
@@UPSTREAM_HEADERS@@
            proxy_pass http://fxev_gateways;
        }
@@OWN_LOCATIONS@@
    }
}
"""

FULL_STEP = """\
            auth_request /_fxev_auth;
            error_page 401 = @fxev_answer;
            error_page 500 502 504 = @fxev_down;
"""

# What an auth step sends: no body, the client's request named, the edge's credential.
AUTH_HEADERS = """\
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URI $request_uri;
            proxy_set_header X-Original-Method $request_method;
            proxy_set_header X-Fxev-Edge @@CREDENTIAL@@;
            proxy_set_header X-Fxev-Admitted "";
            proxy_set_header X-Fxev-Expect "";
            proxy_set_header X-Fxev-Answer "";
@@UPSTREAM_HEADERS@@"""

# With auth lanes: the lane first; what it leaves (403), or a lane that failed (500), to the
# full step in @fxev_checked.
LANE_STEP = """\
            auth_request /_fxev_lane;
            error_page 403 500 = @fxev_checked;
            error_page 502 504 = @fxev_down;
"""

LANE_UPSTREAM = """
    # The gateways' auth lanes (FXEV_EDGE_LANE): the common auth step, answered without Sanic.
    upstream fxev_lanes {
        hash $fxev_client;
@@LANES@@
        keepalive 64;
    }"""

LANE_LOCATIONS = """
        # The auth lane's step: the same request as the full step's, to a lane; it answers 200
        # (as the full step would) or 403 (take the full step), having counted nothing.
        location = /_fxev_lane {
            internal;
            error_page 404 = @fxev_pass;
            proxy_pass http://fxev_lanes@@AUTH_PATH@@;
            proxy_next_upstream error timeout;
@@AUTH_HEADERS@@
        }
        # The full step, for what the lane left: as without lanes.
        location @fxev_checked {
@@FULL_STEP@@@@CACHED@@
        }"""

# An immutable route's answer once its auth step passed: from the cache, keyed on the URI and
# the ETag the gateway gave, so a correction (a new ETag) is a new key: no purge; and on the
# origin and which CORS headers the gateway gives it, so a changed FXEV_CORS_ORIGINS is too.
CACHED = """\
            auth_request_set $fxev_request_id $upstream_http_x_request_id;
            auth_request_set $fxev_etag $upstream_http_x_fxev_etag;
            auth_request_set $fxev_cors $upstream_http_x_fxev_cors;
            auth_request_set $fxev_answer $upstream_http_x_fxev_answer;
            proxy_cache fxev_cache;
            proxy_cache_key "$request_uri $fxev_etag $http_origin $fxev_cors";
            proxy_cache_valid 200 365d;
            proxy_cache_lock on;
            proxy_cache_lock_timeout 10s;
            proxy_ignore_headers Cache-Control Expires Set-Cookie X-Accel-Expires
                                 X-Accel-Redirect X-Accel-Limit-Rate X-Accel-Buffering
                                 X-Accel-Charset;
            # Not on 503: a gateway that answers is up. Its 503 (the answer changed since the auth
            # step, as when the step's gateway died a publish ago) would count as its failure
            # (max_fails=1), and beside a dead gateway leave no gateway for 5 s.
            proxy_next_upstream error timeout http_502 http_504;
            # A cache fill: admitted and recorded by the auth step; sent only with that ETag.
            proxy_set_header X-Fxev-Edge @@CREDENTIAL@@;
            proxy_set_header X-Fxev-Admitted $fxev_request_id;
            proxy_set_header X-Fxev-Expect "$fxev_etag $fxev_cors";
            proxy_set_header X-Fxev-Answer "";
            proxy_set_header X-Original-URI "";
            # The client's method (a fill is a GET): a refused fill is recorded under it.
            proxy_set_header X-Original-Method $request_method;
            # Every answer has the auth step's request id, the one the ledger holds.
            proxy_hide_header X-Request-Id;
            add_header X-Request-Id $fxev_request_id always;
            add_header X-Cache $upstream_cache_status always;
@@DIGEST@@
@@UPSTREAM_HEADERS@@
            proxy_pass http://fxev_gateways;
"""

# An immutable route: checked per request by the auth step, then served from the cache.
IMMUTABLE = "@@CHECK@@@@CACHED@@"

BLOCKS = {
    "IMMUTABLE": IMMUTABLE,
    "CACHED": CACHED,
    "FULL_STEP": FULL_STEP,
    "AUTH_HEADERS": AUTH_HEADERS,
    "PASSED": _PASSED,
    "DIGEST": _DIGEST,
    "STRIP": _STRIP,
    "UPSTREAM_HEADERS": _UPSTREAM_HEADERS,
    "VALIDATOR": _VALIDATOR,
    "MAPS": MAPS,
    "SECOND_REDIRECT": _SECOND_REDIRECT,
    "BODY_OVER": _BODY_OVER,
    **OWN_BLOCKS,
}
DIRECT_BLOCKS = {"CHECK": FULL_STEP, "LANE_UPSTREAM": "", "LANE_LOCATIONS": ""}
LANE_BLOCKS = {"CHECK": LANE_STEP, "LANE_UPSTREAM": LANE_UPSTREAM, "LANE_LOCATIONS": LANE_LOCATIONS}
