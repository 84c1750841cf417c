"""The shipped edge's nginx configuration (``fxev edge config``), as one pure function.

:func:`edge_config` renders a complete ``nginx.conf`` for Debian's nginx (it needs
``auth_request``, ``proxy_cache`` and ``gzip``, all in Debian's ``nginx`` package, and loads its
embedded Perl, ``libnginx-mod-http-perl``, to hash the answers nginx writes itself) from the text
in :mod:`gateway.edge.nginx`, commented line by line; docs/operating/edge.md explains it.
Relative paths (pid, temporary files) are under the prefix nginx is started with (``nginx -p DIR
-c FILE``), so one host can run several. The text holds the edge's credential: keep the file
private (mode 0600).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from gateway.edge import steps
from gateway.edge.nginx import BLOCKS, DIRECT_BLOCKS, LANE_BLOCKS, TEMPLATE
from gateway.http.head import BODY_MAX, HEAD_MAX, HOST_PATTERN

ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$")
CACHE_MAX_SIZE = "1g"
CACHE_INACTIVE = "30d"
# Whether nginx's gzip takes Accept-Encoding as accepting gzip (ngx_http_gzip_accept_encoding):
# only the first "gzip" token at the start or after a comma or space counts; after it, spaces,
# then the end, a comma, or ";" and spaces, then the end or "q=" (either case) with 1, 1.000 or
# a non-zero 0.ddd of at most three decimals, ended by the end, a comma or a space. Anything else
# (another parameter, a fourth decimal, q=0) is refused. Matched case-insensitively (nginx's
# "~*", Python's re.IGNORECASE): the atomic group keeps a later token from being tried.
GZIP_ACCEPTED = (
    r"^(?>.*?(?:^|(?<=[ ,]))gzip) *(?:$|,|; *(?:$|q="
    r"(?:1(?:\.0{0,3})?|0\.(?=[0-9]{0,3}(?:$|[ ,]))0{0,2}[1-9][0-9]{0,2})(?:$|[ ,])))"
)


@dataclasses.dataclass(frozen=True, slots=True)
class EdgePlan:
    listen: str
    upstreams: tuple[str, ...]
    cache_dir: Path
    credential: str  # the edge's credential (hex), as the gateways check it
    lanes: tuple[str, ...] = ()  # the gateways' auth lanes (FXEV_EDGE_LANE), if they run them


def at_least(number: int) -> str:
    """A regular expression (PCRE and Python's alike) matching the decimal numbers, written with
    no leading zero, of ``number`` or more: nginx compares numbers in a map only so."""
    digits = str(number)
    size = len(digits)
    alternatives = [f"[1-9][0-9]{{{size},}}"]  # more digits
    for at, digit in enumerate(digits):  # the same digits up to here, then a greater one
        if digit != "9":
            rest = size - at - 1
            alternatives.append(
                digits[:at] + f"[{int(digit) + 1}-9]" + (f"[0-9]{{{rest}}}" if rest else "")
            )
    alternatives.append(digits)
    return "^(?:" + "|".join(alternatives) + ")$"


def check_address(text: str) -> str:
    """``text`` if it is ``HOST:PORT`` (a port 1-65535), else ValueError."""
    match = ADDRESS.fullmatch(text)
    if match is None or not 0 < int(match.group(2)) < 65536:
        raise ValueError(f"not HOST:PORT: {text!r}")
    return text


def check_plan(plan: EdgePlan) -> None:
    """ValueError, naming the first, if an address or the cache folder cannot be used (the
    credential aside)."""
    for address in (plan.listen, *plan.upstreams, *plan.lanes):
        check_address(address)
    if not plan.upstreams:
        raise ValueError("at least one upstream gateway")
    cache_dir = str(plan.cache_dir)
    if not plan.cache_dir.is_absolute() or any(c in cache_dir for c in " ;{}'\"\\$#"):
        raise ValueError(f"the cache folder must be an absolute plain path: {cache_dir!r}")


def edge_config(plan: EdgePlan) -> str:
    """The configuration text (ends with a newline)."""
    if not re.fullmatch(r"[0-9a-f]{64}", plan.credential):
        raise ValueError("the edge credential must be 64 hex digits")
    check_plan(plan)
    cache_dir = str(plan.cache_dir)
    servers = "\n".join(
        f"        server {address} max_fails=1 fail_timeout=5s;" for address in plan.upstreams
    )
    text = TEMPLATE
    blocks = {**BLOCKS, **(LANE_BLOCKS if plan.lanes else DIRECT_BLOCKS)}
    while "@@" in text and any(f"@@{name}@@" in text for name in blocks):  # blocks hold blocks
        for name, block in blocks.items():
            text = text.replace(f"@@{name}@@", block)
    lanes = "\n".join(
        f"        server {address} max_fails=1 fail_timeout=5s;" for address in plan.lanes
    )
    values = {
        "LISTEN": plan.listen,
        "SERVERS": servers,
        "LANES": lanes,
        "CACHE_DIR": cache_dir,
        "CREDENTIAL": plan.credential,
        "AUTH_PATH": steps.AUTH_PATH,
        "ANSWER_PATH": steps.ANSWER_PATH,
        "REFUSAL_PREFIX": steps.REFUSAL_PREFIX,
        # nginx's own refusals' locations, /_fxev_<name>: one for each refusal a gateway writes
        "REFUSAL_URIS": "~^/_fxev_(" + "|".join(steps.REFUSALS) + ")$",
        "MAX_SIZE": CACHE_MAX_SIZE,
        "INACTIVE": CACHE_INACTIVE,
        "GZIP_ACCEPTED": "~*" + GZIP_ACCEPTED,
        "HOST_VALUE": f"~^{HOST_PATTERN}$",
        # with its blank line's CRLF CRLF, the 4 bytes the gateway's limit leaves out
        "HEAD_OVER": "~" + at_least(HEAD_MAX + 4),
        "BODY_MAX": str(BODY_MAX),
    }
    for name, value in values.items():
        text = text.replace(f"@@{name}@@", value)
    return text
