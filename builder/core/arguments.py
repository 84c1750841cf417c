"""The command lines' argument parser: argparse's, with usage errors on one line.

Every CLI error is one line on stderr (docs/decisions.md#cli). argparse prints its usage block
before a usage error; :class:`OneLineParser` prints the error alone,
``fxev capture: error: argument --source: invalid choice: ...``, and exits 2. ``--help`` still
prints the usage. ``fxev`` passes it as every subcommand's ``parser_class``, so the commands the
gateway and the token store contribute use it too; ``python -m gateway``, ``make run``'s demo and
``make fleet`` use it as well.

A command's handler is named by module and function (:class:`Deferred`) and imported when that
command runs, so the parser itself loads no store, no HTTP client and no server: ``fxev --help``
and a usage error answer at once, and a command loads its handler's modules, not every
command's.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from collections.abc import Callable
from typing import Any, NoReturn

from builder.core.settings import http_url


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


Handler = Callable[[argparse.Namespace, Any], int]


@dataclasses.dataclass(frozen=True, slots=True)
class Deferred:
    """A command's handler named by module and function (``set_defaults(handler=...)``),
    imported when the command runs. Called like the handler: the parsed arguments and the
    settings (or the environment) in, the exit code out."""

    module: str
    name: str

    def load(self) -> Handler:
        handler: Handler = getattr(importlib.import_module(self.module), self.name)
        return handler

    def __call__(self, args: argparse.Namespace, context: Any) -> int:
        return self.load()(args, context)


def port_number(raw: str) -> int:
    """A TCP port to listen on, 1-65535 (argparse ``type``)."""
    return _port(raw, lowest=1)


def port_or_free(raw: str) -> int:
    """A TCP port to listen on, or 0 for a free one (argparse ``type``)."""
    return _port(raw, lowest=0)


def ports_or_free(raw: str) -> list[int]:
    """Comma-separated TCP ports, each as :func:`port_or_free` reads it (argparse ``type``)."""
    return [port_or_free(part) for part in raw.split(",")]


def _port(raw: str, lowest: int) -> int:
    try:
        port = int(raw)
    except ValueError:
        port = -1
    if not lowest <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port {lowest}-65535, got {raw!r}")
    return port


def count_of_at_least_one(raw: str) -> int:
    """A count such as ``--workers``: a whole number, at least 1 (argparse ``type``)."""
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {raw!r}")
    return count


def source_url(raw: str) -> str:
    """A source's ``--url``: an http(s) URL with a host, or a usage error (nothing opened,
    nothing written)."""
    try:
        return http_url(raw)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
