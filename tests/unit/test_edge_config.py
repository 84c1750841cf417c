"""``fxev edge config``'s text (pure) and the packing of an answer the edge carries."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sanic import exceptions as sanic_exceptions
from sanic.response import HTTPResponse

from gateway.edge import steps
from gateway.edge.config import GZIP_ACCEPTED, EdgePlan, at_least, check_address, edge_config
from gateway.errors import ApiError, InvalidParams
from gateway.http.head import BODY_MAX, HEAD_MAX
from gateway.http.sending import MALFORMED, as_api_error

CREDENTIAL = "ab" * 32
PLAN = EdgePlan(
    listen="127.0.0.1:8080",
    upstreams=("127.0.0.1:8001", "10.0.0.2:8000"),
    cache_dir=Path("/var/cache/fxev-edge"),
    credential=CREDENTIAL,
)


def test_the_config_names_every_gateway_the_listener_and_the_cache() -> None:
    text = edge_config(PLAN)
    assert "listen 127.0.0.1:8080;" in text
    assert "server 127.0.0.1:8001 max_fails=1 fail_timeout=5s;" in text
    assert "server 10.0.0.2:8000 max_fails=1 fail_timeout=5s;" in text
    assert "proxy_cache_path /var/cache/fxev-edge " in text
    assert "@@" not in text and text.endswith("}\n")
    assert text.count("{") == text.count("}")


@pytest.mark.parametrize(
    "refused",
    [
        InvalidParams(MALFORMED),
        as_api_error(sanic_exceptions.PayloadTooLarge("x")),
        as_api_error(sanic_exceptions.MethodNotAllowed("x")),
    ],
)
def test_the_edges_own_refusals_say_what_the_gateway_says(refused: ApiError) -> None:
    """nginx's own 400s and 405 (docs/operating/edge.md#limits) carry the gateway's code and
    message for such a request, whichever edge is printed (a quote escaped, in nginx's
    single-quoted string)."""
    for plan in (PLAN, dataclasses.replace(PLAN, lanes=("127.0.0.1:8011",))):
        text = edge_config(plan)
        assert f'"code":"{refused.code}","message":' in text
        assert '"{}",'.format(refused.shown_message.replace("'", "\\'")) in text


LANED = dataclasses.replace(PLAN, lanes=("127.0.0.1:8011", "10.0.0.2:8010"))


def test_with_lanes_each_immutable_route_asks_a_lane_first_then_the_full_step() -> None:
    text = edge_config(LANED)
    assert "@@" not in text and text.count("{") == text.count("}")
    assert "server 127.0.0.1:8011 max_fails=1 fail_timeout=5s;" in text
    assert "server 10.0.0.2:8010 max_fails=1 fail_timeout=5s;" in text
    # as-of /v1/rates and evidence: the lane, and what it leaves (403) or fails (500) goes on
    assert text.count("auth_request /_fxev_lane;") == 2
    assert text.count("error_page 403 500 = @fxev_checked;") == 2
    checked = text[text.index("location @fxev_checked {") :]
    assert "auth_request /_fxev_auth;" in checked[: checked.index("proxy_pass")]
    assert "proxy_pass http://fxev_lanes/_edge/auth;" in text
    # without lanes, none of it
    plain = edge_config(PLAN)
    assert "fxev_lanes" not in plain and "@fxev_checked" not in plain
    assert plain.count("auth_request /_fxev_auth;") == 2


@pytest.mark.parametrize("plan", [PLAN, LANED], ids=["direct", "lanes"])
def test_the_credential_is_only_sent_to_the_gateways(plan: EdgePlan) -> None:
    lines = [line.strip() for line in edge_config(plan).splitlines() if CREDENTIAL in line]
    sent = {f"proxy_set_header {name} {CREDENTIAL};" for name in ("X-Fxev-Edge", "X-Fxev-Passed")}
    assert lines and set(lines) == sent


@pytest.mark.parametrize("plan", [PLAN, LANED], ids=["direct", "lanes"])
def test_every_location_that_proxies_blanks_or_sets_the_edge_headers(plan: EdgePlan) -> None:
    text = edge_config(plan)
    assert text.count("proxy_pass ") == text.count("proxy_set_header X-Fxev-Edge ")


@pytest.mark.parametrize("number", [0, 1, 9, 10, 99, 100, 8196, 8199, 8200, 9999, 12345])
def test_at_least_matches_the_numbers_from_its_own_on(number: int) -> None:
    pattern = re.compile(at_least(number))
    for candidate in range(max(0, number - 2000), number + 20_000):
        assert bool(pattern.match(str(candidate))) == (candidate >= number), candidate
    assert not pattern.match("0" + str(number)) and not pattern.match(str(number) + "x")


def test_the_head_limit_is_the_gateways_with_its_blank_line() -> None:
    text = edge_config(PLAN)
    assert f'"~{at_least(HEAD_MAX + 4)}" $fxev_not_refused_yet;' in text
    assert f"client_max_body_size {BODY_MAX};" in text


def test_large_answers_go_by_sendfile_without_tcp_nopush() -> None:
    text = edge_config(PLAN)
    assert "    sendfile on;" in text and "tcp_nopush on" not in text


@pytest.mark.parametrize(
    "change",
    [
        {"listen": "8080"},
        {"listen": "127.0.0.1:0"},
        {"upstreams": ()},
        {"upstreams": ("a b:80",)},
        {"cache_dir": Path("relative")},
        {"cache_dir": Path("/x;y")},
        {"credential": "short"},
        {"lanes": ("nowhere",)},
    ],
)
def test_a_bad_plan_is_refused(change: dict[str, object]) -> None:
    fields = {
        "listen": PLAN.listen,
        "upstreams": PLAN.upstreams,
        "cache_dir": PLAN.cache_dir,
        "credential": PLAN.credential,
        "lanes": PLAN.lanes,
        **change,
    }
    with pytest.raises(ValueError):
        edge_config(EdgePlan(**fields))  # type: ignore[arg-type]


def test_addresses() -> None:
    assert check_address("[::1]:8000") == "[::1]:8000"
    assert check_address("gateway-1.internal:8000") == "gateway-1.internal:8000"
    with pytest.raises(ValueError):
        check_address("host:65536")


header_text = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1)


@given(
    status=st.sampled_from([200, 304, 400, 401, 404, 422, 429, 503]),
    headers=st.dictionaries(
        st.from_regex(r"X-[A-Za-z]{1,10}", fullmatch=True), header_text, max_size=5
    ),
    body=st.binary(max_size=300),
)
def test_a_packed_answer_unpacks_to_itself(
    status: int, headers: dict[str, str], body: bytes
) -> None:
    response = HTTPResponse(body, status=status, headers=headers, content_type="application/json")
    got_status, got_headers, got_body = steps.unpack(steps.pack(response))
    assert got_status == status and got_body == body
    expected = list(headers.items())
    if body:
        expected.insert(0, ("content-type", "application/json"))
    elif status == 304:  # the type of the 200 it stands for, which the edge's gzip goes by
        expected.insert(0, (steps.TYPE, "application/json"))
    assert got_headers == expected


@pytest.mark.parametrize("text", ["", "not base64!", "MjAw"])
def test_what_is_not_a_packed_answer_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        steps.unpack(text)


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        ("gzip", True),
        ("GZIP", True),
        ("deflate, gzip", True),
        ("gzip;q=0.5", True),
        ("gzip; q=0.5", True),
        ("gzip ;Q=0.001", True),
        ("gzip;q=1", True),
        ("gzip;q=1.000", True),
        ("gzip;", True),
        ("x-gzip, gzip", True),  # the first token that is "gzip" counts
        ("gzip;q=0.5 x", True),  # nginx stops reading the value at a space
        ("", False),
        ("identity", False),
        ("x-gzip", False),
        ("gzipx", False),
        ("gzip;q=0", False),
        ("gzip;q=0.000", False),
        ("gzip;q=0.0001", False),  # a fourth decimal
        ("gzip;q=1.5", False),
        ("gzip;q=1.0001", False),
        ("gzip;q=", False),
        ("gzip;level=1", False),
        ("gzip;q=0.5;level=1", False),
        ("gzip; q =0.5", False),
        ("gzip;q=0, gzip", False),  # only the first token counts
    ],
)
def test_gzip_is_predicted_as_nginx_reads_accept_encoding(header: str, accepted: bool) -> None:
    assert bool(re.search(GZIP_ACCEPTED, header, re.IGNORECASE)) is accepted
    assert f'"~*{GZIP_ACCEPTED}" 1;' in edge_config(PLAN)
