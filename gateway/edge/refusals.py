"""The shipped edge's ``nginx.conf``, what nginx answers by itself: its 503 when no gateway
answered, and the 400s and 405 for what it refuses before any gateway sees it, asked of a
gateway's refusal route or, when none answers, written here the same
(docs/operating/edge.md#limits). Each names a fresh request id and carries the
``Repr-Digest`` of its bytes. Blocks for :data:`gateway.edge.nginx.TEMPLATE`, which
:func:`gateway.edge.config.edge_config` fills.
"""

from __future__ import annotations

import orjson

from gateway.edge.steps import REFUSALS

# What nginx answers by itself (no gateway answered, or it refused the request): the API's JSON
# error body ($fxev_own_body), with a fresh request id of its own and the body's Repr-Digest,
# never cached. nginx compresses none of these (only a 200, 403 or 404).
OWN_ANSWER = """\
            default_type application/json;
            add_header X-Request-Id $fxev_own_request_id always;
            add_header Repr-Digest $fxev_own_repr_digest always;
            add_header Cache-Control no-store always;
            add_header X-Cache PASS always;"""

# A refusal asked of a gateway: none of the client's headers (nginx could not read them all)
# and no body, only the edge's credential; an answer other than the refusal (none, or a gateway
# that does not know the credential yet) is intercepted, and nginx writes the refusal itself.
REFUSAL = """\
            add_header X-Cache PASS always;
@@DIGEST@@
            proxy_intercept_errors on;
            proxy_pass_request_headers off;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";  # else the client's length, with no body
            proxy_set_header Host $proxy_host;
            proxy_set_header Connection "";
            proxy_set_header X-Fxev-Edge @@CREDENTIAL@@;
            proxy_pass http://fxev_gateways;"""


def refused(name: str, status: int, code: str, message: str, extra: str = "") -> str:
    """The locations of one of nginx's own refusals: ``/_fxev_<name>`` (internal: asked from
    outside, the gateway's own 404), which asks a gateway's refusal route for the answer of
    ``status``, and falls back to ``@fxev_<name>_here`` if none gives it: nginx's own text, the
    API's body of ``code`` and ``message`` (escaped for nginx's single quotes), and ``extra``
    lines."""
    return f"""\
        location = /_fxev_{name} {{
            internal;
            error_page 404 = @fxev_pass;
            error_page 418 ={status} @fxev_{name};
            return 418;
        }}
        location @fxev_{name} {{
            rewrite ^ @@REFUSAL_PREFIX@@{name}? break;
@@REFUSAL@@
            error_page 404 500 502 503 504 ={status} @fxev_{name}_here;
        }}
        location @fxev_{name}_here {{
@@OWN_ANSWER@@{extra}
            set $fxev_own_body '{{"code":"{code}","message":"{message}",';
            set $fxev_own_body '$fxev_own_body"request_id":"$fxev_own_request_id",';
            set $fxev_own_body '$fxev_own_body"retryable":false}}';
            return 200 $fxev_own_body;
        }}"""


def refused_as_a_gateway(name: str) -> str:
    """:func:`refused` for the gateway's refusal ``name`` (:data:`gateway.edge.steps.REFUSALS`): its
    status, code, message and headers, so nginx writes the very body and headers a gateway
    writes."""
    kind, message = REFUSALS[name]
    text = orjson.dumps(message).decode()[1:-1]  # as the gateway's JSON body has it
    extra = "".join(
        f'\n            add_header {header} "{value}" always;'
        for header, value in kind.headers.items()
    )
    return refused(
        name, kind.status, kind.code, text.replace("\\", "\\\\").replace("'", "\\'"), extra
    )


# At the http level: nginx's embedded Perl hashes what nginx writes itself.
OWN_DIGEST = """\
    # A HEAD answer has no body and no Repr-Digest, as from a gateway (nor is Perl run for it).
    map $request_method $fxev_own_repr_digest {
        HEAD "";
        default $fxev_own_digest;
    }
    # The Repr-Digest (RFC 9530, as a gateway writes it) of the body nginx writes itself, which
    # names a fresh request id: its SHA-256 in base64, padded. Read only where it is added.
    perl_set $fxev_own_digest 'sub {
        use Digest::SHA ();
        my $digest = Digest::SHA::sha256_base64($_[0]->variable("fxev_own_body"));
        return "sha-256=:" . $digest . "=" x (-length($digest) % 4) . ":";
    }';"""

# In the server: the locations of those answers.
OWN_LOCATIONS = """\
        # No gateway answered: the API's 503 body (no detail: DECISIONS 9), retryable.
        location @fxev_down {
@@OWN_ANSWER@@
            set $fxev_own_body '{"code":"INTERNAL","message":"Internal error.","request_id":';
            set $fxev_own_body '$fxev_own_body"$fxev_own_request_id","retryable":true}';
            return 503 $fxev_own_body;
        }
        # nginx's own refusals (above): asked from outside, the gateway's own 404; else the
        # gateway's 400 and 405 answers, asked of a gateway's refusal route (the API's body
        # with its Repr-Digest; nothing counted or recorded) or, if no gateway gives them,
        # written here, the same.
@@MALFORMED_ASKED@@
@@TOO_LARGE_ASKED@@
@@NOT_ALLOWED_ASKED@@"""

OWN_BLOCKS = {
    "OWN_DIGEST": OWN_DIGEST,
    "OWN_LOCATIONS": OWN_LOCATIONS,
    "OWN_ANSWER": OWN_ANSWER,
    "REFUSAL": REFUSAL,
    **{f"{name.upper()}_ASKED": refused_as_a_gateway(name) for name in REFUSALS},
}
