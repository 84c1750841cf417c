"""Whether a port can be listened on, checked before anything is written or started.

``make run``, ``make fleet`` and ``fxev serve`` check their ports first, so a taken one is one
line on stderr and exit 1 (docs/decisions.md#cli), not a traceback from deep inside a server
start, and never after a demo token was revoked or issued.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable

from builder.core.errors import Conflict


def refuse_unusable_port(host: str, port: int, advice: str | Callable[[], str]) -> None:
    """Raise :class:`Conflict` when ``port`` on ``host`` cannot be bound the way the gateway
    binds it (``SO_REUSEADDR``): taken by another process, or an address this host lacks.
    ``advice`` ends the message (what to do instead; a callable is asked only then)."""
    try:
        _bind(host, port)
    except (OSError, OverflowError) as error:
        taken = isinstance(error, OSError) and error.errno == errno.EADDRINUSE
        reason = "is taken" if taken else f"cannot be used: {error}"
        said = advice if isinstance(advice, str) else advice()
        raise Conflict(f"port {port} on {host} {reason}; {said}") from None


def free_port_after(host: str, port: int, tries: int = 100) -> int | None:
    """The first port above ``port`` on ``host`` that can be bound now, within ``tries``."""
    for candidate in range(max(port, 0) + 1, min(max(port, 0) + 1 + tries, 65536)):
        try:
            _bind(host, candidate)
        except (OSError, OverflowError):
            continue
        return candidate
    return None


def _bind(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
