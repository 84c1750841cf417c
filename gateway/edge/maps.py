"""The shipped edge's ``nginx.conf``, its ``http`` level: gzip and the maps nginx computes per
request (docs/operating/edge.md#headers), filled in at ``@@MAPS@@`` of
:data:`gateway.edge.nginx.TEMPLATE`.

A map is evaluated lazily, when a directive reads its variable: these cost a request nothing
until a location adds the header or tests the condition that names them.
"""

from __future__ import annotations

MAPS = """\
    # gzip for JSON (and HTML, which nginx always includes) when the client accepts it; nginx
    # makes the ETag weak. The maps below predict when it compresses (status 200/403/404, a
    # body that is not empty, one of those types, HTTP/1.1, and "gzip" accepted as nginx reads
    # Accept-Encoding: the first "gzip" token, bare or with ";q=" of a non-zero value of at most
    # three decimals; the type as nginx reads it, below), to drop Repr-Digest from and add
    # Vary: Accept-Encoding to exactly those (gzip_vary adds it to identity answers too); a
    # HEAD gets the GET's headers. A 304 has no body, but it stands for the 200 it validates
    # (RFC 9110 15.4.5): when that 200 would be compressed (its type from the gateway's
    # X-Fxev-Type, or from the cached 200), the 304 says Vary and the weak ETag.
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
        # nginx's type: up to the first ";" that spaces (not tabs) and "charset=" follow, or
        # the whole value when none does (ngx_http_upstream_copy_content_type).
        "~*^(application/json|text/html)(; *charset=.*)?$" 1;
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
    # A request with If-Match, If-Unmodified-Since or If-Modified-Since: passed (edge.md). Sent
    # empty, such a header is no value to a map, but nginx's cache still evaluates it (an empty
    # If-Match or If-Unmodified-Since is its 412 page): Perl, which sees an empty header, is
    # asked only when the three are empty.
    map "$http_if_match$http_if_unmodified_since$http_if_modified_since" $fxev_preconditioned {
        default 1;
        "" $fxev_precondition_sent;
    }
    perl_set $fxev_precondition_sent 'sub {
        my $r = shift;
        for my $name ("If-Match", "If-Unmodified-Since", "If-Modified-Since") {
            return "1" if defined $r->header_in($name);
        }
        return "0";
    }';
    # The Host a gateway gets: the client's; for an HTTP/1.0 client that sent none, the address
    # it reached the edge at (nginx speaks HTTP/1.1 to the gateways, and RFC 9112 3.2 has an
    # HTTP/1.1 request without a Host refused).
    map $http_host $fxev_host {
        default $http_host;
        "" $fxev_server_host:$server_port;
    }
    map $server_addr $fxev_server_host {
        default $server_addr;
        "~:" "[$server_addr]";
    }
    # A Host a gateway would refuse (RFC 9112 3.2, as gateway/http/head.py reads it), which nginx
    # takes (a brace, a backslash, an "@", a second port...): the edge's own 400, as a gateway
    # alone answers, rather than an auth step refused. None is an HTTP/1.0 request's right.
    map $http_host $fxev_host_invalid {
        default 1;
        "" 0;
        "@@HOST_VALUE@@" 0;
    }
    # An absolute target with a fragment (RFC 9112 3.2: no part of a target), which nginx passes
    # on without it: refused, as gateway/http/head.py refuses it, rather than answered.
    map $request $fxev_fragment_invalid {
        default 0;
        "~^[^ ]+ [A-Za-z][-A-Za-z0-9+.]*://[^ ]*#" 1;
    }
    map "$fxev_host_invalid$fxev_fragment_invalid" $fxev_head_invalid {
        default 1;
        "00" 0;
    }
    map $uri $fxev_bad_head {
        volatile;  # read again after the redirect to the refusal, where $uri has changed
        default $fxev_head_invalid;
        # nginx's own refusals: the server-level check runs again after the redirect to them
        "@@REFUSAL_URIS@@" 0;
    }
    # A head (request line and headers, the blank line included) a gateway alone refuses as
    # over its size limit: the edge's own 400, as a gateway alone answers, rather than an auth
    # step over the gateway's limit. nginx's $request_length is the head's size until the body
    # is read.
    map $request_length $fxev_head_too_large {
        volatile;  # else its first value is kept, and the redirect to the refusal refused again
        default 0;
        "@@HEAD_OVER@@" $fxev_not_refused_yet;
    }
    map $uri $fxev_not_refused_yet {
        volatile;  # as $fxev_bad_head, after the redirect to the refusal
        default 1;
        "@@REFUSAL_URIS@@" 0;
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
    }"""
