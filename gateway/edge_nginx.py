"""The text of the shipped edge's ``nginx.conf``: its template and the blocks it is made of,
commented line by line (docs/operating/edge.md explains them). ``@@NAME@@`` marks where a block
or a value goes; :func:`gateway.edge_config.edge_config` fills them and checks the values.
"""

from __future__ import annotations

# Pass-through: the client's request as it came, to any gateway; the edge's own headers, if a
# client sent them, are blanked (an empty value is not sent).
_STRIP = """\
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
            add_header X-Cache PASS always;
@@DIGEST@@
@@STRIP@@
@@UPSTREAM_HEADERS@@
            proxy_pass http://fxev_gateways;"""

_UPSTREAM_HEADERS = """\
            proxy_set_header Host $http_host;
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

# What nginx answers by itself (no gateway answered, or it refused the request): the API's JSON
# error body, with a fresh request id of its own, never cached.
_OWN_ANSWER = """\
            default_type application/json;
            add_header X-Request-Id $fxev_own_request_id always;
            add_header Cache-Control no-store always;
            add_header X-Cache PASS always;"""

TEMPLATE = """\
# fxev's edge: nginx in front of the gateways (docs/operating/edge.md). Made by
# `fxev edge config`. It holds the edge's credential: keep this file private (mode 0600).
# Run it with a prefix of its own: nginx -p /var/lib/fxev-edge -c /etc/fxev/edge.conf
worker_processes auto;
pid nginx.pid;
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
    # Cached bodies go from the cache's files to the socket in the kernel. Not with tcp_nopush:
    # together they held back the end of large answers (about 900 requests a second instead of
    # 10,000 for the 108 KB year page, measured; docs/performance.md).
    sendfile on;
    # No ranges: every answer is the whole body the ledger hashed.
    max_ranges 0;

    # The gateways. A gateway that fails a connection is left out for 5 s (health by failure);
    # a GET that failed on one is retried once on another (proxy_next_upstream below).
    upstream fxev_gateways {
@@SERVERS@@
        keepalive 64;
    }@@LANE_UPSTREAM@@

    # The cache of immutable answers (as-of /v1/rates, /v1/evidence/ID, /v1/log/...): bounded
    # on disk, kept across restarts (nginx reloads its index from the folder).
    proxy_cache_path @@CACHE_DIR@@ levels=1:2 keys_zone=fxev_cache:16m max_size=@@MAX_SIZE@@
                     inactive=@@INACTIVE@@ use_temp_path=off;

    # gzip for JSON (and HTML, which nginx always includes) when the client accepts it; nginx
    # makes the ETag weak. The maps below predict when it compresses (status 200/403/404, a
    # body that is not empty, one of those types, HTTP/1.1, and "gzip" accepted as nginx reads
    # Accept-Encoding: the first "gzip" token, bare or with ";q=" of a non-zero value of at most
    # three decimals; the type bare or followed by ";charset=..." only, as nginx matches it), to
    # drop Repr-Digest from and add Vary: Accept-Encoding to exactly those (gzip_vary adds it
    # to identity answers too); a HEAD gets the GET's headers. A 304 has no body, but it stands
    # for the 200 it validates (RFC 9110 15.4.5): when that 200 would be compressed (its type
    # from the gateway's X-Fxev-Type, or from the cached 200), the 304 says Vary and the weak ETag.
    gzip on;
    gzip_types application/json;
    gzip_min_length 1;
    gzip_proxied any;
    gzip_vary off;
    gzip_http_version 1.1;
    map $http_accept_encoding $fxev_gzip_accepted {
        default 0;
        "@@GZIP_ACCEPTED@@" 1;
    }
    # What the answer is for that prediction: its type, or for a 304 the type of its 200.
    map $status $fxev_shown_type {
        default $sent_http_content_type;
        304 $upstream_http_x_fxev_type$upstream_http_content_type;
    }
    map $fxev_shown_type $fxev_gzip_type {
        default 0;
        "~*^(application/json|text/html)(;\\s*charset=[^;]*)?$" 1;
    }
    map "$fxev_gzip_accepted$fxev_gzip_type $server_protocol $status $sent_http_content_length"
        $fxev_gzipped {
        default 0;
        "~^11 HTTP/1\\.1 (200|403|404) (?!0$)" 1;
        "~^11 HTTP/1\\.1 304 " 1;
    }
    map "$request_method $status $fxev_gzipped" $fxev_repr_digest {
        "~^HEAD " "";
        "~ 304 " "";
        "~ 1$" "";
        default $upstream_http_repr_digest;
    }
    map $fxev_gzipped $fxev_vary {
        default "";
        1 Accept-Encoding;
    }
    map "$fxev_gzipped $status $upstream_http_etag" $fxev_validator {
        default $upstream_http_etag;
        "~^1 304 (?<fxev_strong>[^W].*)$" W/$fxev_strong;
    }
    # The immutable routes: the auth step decides what may be cached; everything else passes.
    map "$request_method $arg_as_of_revision" $fxev_as_of {
        default 0;
        "~^(GET|HEAD) ." 1;
    }
    # A request with a body: passed, so that the body is read (or refused) before any auth step
    # counts and records the request.
    map "$http_transfer_encoding|$http_content_length" $fxev_with_body {
        default 1;
        "|" 0;
        "|0" 0;
    }
    map "$http_if_match$http_if_unmodified_since$http_if_modified_since" $fxev_preconditioned {
        default 1;
        "" 0;
    }
    # A fresh request id for what nginx answers by itself: a UUID4 made of nginx's 32 random
    # hex digits, the 13th replaced by the version (4), the 17th by the variant (8, 9, a or b,
    # chosen by the digit it replaces).
    map $request_id $fxev_uuid_variant {
        "~^.{16}[0-3]" 8;
        "~^.{16}[4-7]" 9;
        "~^.{16}[89ab]" a;
        default b;
    }
    map $request_id $fxev_own_request_id {
        "~^(?<a>.{8})(?<b>.{4}).(?<c>.{3}).(?<d>.{3})(?<e>.{12})$"
            "$a-$b-4$c-$fxev_uuid_variant$d-$e";
    }
    # The log's answers: the gateway's request id when it answered this request, a fresh one
    # when the answer came from the cache.
    map $upstream_cache_status $fxev_log_request_id {
        default $fxev_own_request_id;
        "" $upstream_http_x_request_id;
        MISS $upstream_http_x_request_id;
        EXPIRED $upstream_http_x_request_id;
        BYPASS $upstream_http_x_request_id;
    }

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
        error_page 400 414 494 501 505 =400 /_fxev_malformed;
        error_page 405 =405 /_fxev_not_allowed;

        # /v1/rates with as_of_revision (GET or HEAD): an immutable answer; without it, passed.
        # Passed too: If-Match, If-Unmodified-Since or If-Modified-Since, which the gateways
        # ignore, and which nginx would answer itself for an answer its cache holds (its own
        # 412, or a 200 where If-None-Match matches: RFC 9110 13.1.3 has it ignore the date).
        location = /v1/rates {
            error_page 418 = @fxev_pass;
            # A second redirect may follow the first: the full step's refusal after the lane's,
            # a body nginx cannot read after a pass.
            recursive_error_pages on;
            if ($fxev_as_of = 0) { return 418; }
            if ($fxev_preconditioned) { return 418; }
            if ($fxev_with_body) { return 418; }
@@IMMUTABLE@@
        }
        location ~ ^/v1/evidence/[^/]*$ {
            error_page 418 = @fxev_pass;
            # A second redirect may follow the first: the full step's refusal after the lane's,
            # a body nginx cannot read after a pass.
            recursive_error_pages on;
            if ($request_method !~ ^(GET|HEAD)$) { return 418; }
            if ($fxev_preconditioned) { return 418; }
            if ($fxev_with_body) { return 418; }
@@IMMUTABLE@@
        }
        # The transparency log: public; tiles, entry bundles and rows lists cached (immutable),
        # no token to check, a fresh X-Request-Id. Passed as the as-of pages are: requests
        # with another precondition than If-None-Match.
        location /v1/log/ {
            recursive_error_pages on;
            error_page 418 = @fxev_pass;
            if ($fxev_preconditioned) { return 418; }
            proxy_cache fxev_cache;
            proxy_cache_key "log $request_uri";
            proxy_cache_lock on;
            proxy_hide_header X-Request-Id;
            add_header X-Request-Id $fxev_log_request_id always;
            add_header X-Cache $upstream_cache_status always;
@@DIGEST@@
@@VALIDATOR@@
@@STRIP@@
@@UPSTREAM_HEADERS@@
            proxy_pass http://fxev_gateways;
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
        # No gateway answered: the API's 503 body (no detail: DECISIONS 9), retryable.
        location @fxev_down {
@@OWN_ANSWER@@
            set $fxev_down '{"code":"INTERNAL","message":"Internal error.","request_id":';
            return 503 '$fxev_down"$fxev_own_request_id","retryable":true}';
        }
        # nginx's own refusals (above): the gateway's 400 and 405 bodies (gateway/sending.py);
        # asked from outside, the gateway's own 404.
        location = /_fxev_malformed {
            internal;
            error_page 404 = @fxev_pass;
@@OWN_ANSWER@@
            set $fxev_bad '{"code":"INVALID_PARAMS","message":"The request is malformed.",';
            return 200 '$fxev_bad"request_id":"$fxev_own_request_id","retryable":false}';
        }
        location = /_fxev_not_allowed {
            internal;
            error_page 404 = @fxev_pass;
@@OWN_ANSWER@@
            add_header Allow "GET, HEAD" always;
            set $fxev_bad '{"code":"METHOD_NOT_ALLOWED","message":';
            set $fxev_bad '$fxev_bad"Only GET and HEAD are allowed.","request_id":';
            return 200 '$fxev_bad"$fxev_own_request_id","retryable":false}';
        }
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
# the ETag the gateway gave, so a correction (a new ETag) is a new key: no purge.
CACHED = """\
            auth_request_set $fxev_request_id $upstream_http_x_request_id;
            auth_request_set $fxev_etag $upstream_http_x_fxev_etag;
            auth_request_set $fxev_answer $upstream_http_x_fxev_answer;
            proxy_cache fxev_cache;
            proxy_cache_key "$request_uri $fxev_etag $http_origin";
            proxy_cache_valid 200 365d;
            proxy_cache_lock on;
            proxy_cache_lock_timeout 10s;
            proxy_ignore_headers Cache-Control Expires Set-Cookie X-Accel-Expires
                                 X-Accel-Redirect X-Accel-Limit-Rate X-Accel-Buffering
                                 X-Accel-Charset;
            proxy_next_upstream error timeout http_502 http_503 http_504;
            # A cache fill: admitted and recorded by the auth step; sent only with that ETag.
            proxy_set_header X-Fxev-Edge @@CREDENTIAL@@;
            proxy_set_header X-Fxev-Admitted $fxev_request_id;
            proxy_set_header X-Fxev-Expect $fxev_etag;
            proxy_set_header X-Fxev-Answer "";
            proxy_set_header X-Original-URI "";
            proxy_set_header X-Original-Method "";
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

BLOCKS = {"IMMUTABLE": IMMUTABLE, "CACHED": CACHED, "FULL_STEP": FULL_STEP}
BLOCKS |= {"AUTH_HEADERS": AUTH_HEADERS, "PASSED": _PASSED, "DIGEST": _DIGEST, "STRIP": _STRIP}
BLOCKS["UPSTREAM_HEADERS"] = _UPSTREAM_HEADERS
BLOCKS["OWN_ANSWER"] = _OWN_ANSWER
BLOCKS["VALIDATOR"] = _VALIDATOR
DIRECT_BLOCKS = {"CHECK": FULL_STEP, "LANE_UPSTREAM": "", "LANE_LOCATIONS": ""}
LANE_BLOCKS = {"CHECK": LANE_STEP, "LANE_UPSTREAM": LANE_UPSTREAM, "LANE_LOCATIONS": LANE_LOCATIONS}
