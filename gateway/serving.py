"""Running a Sanic app built by a factory in N worker processes: ``fxev serve`` and the benches."""

from __future__ import annotations

from collections.abc import Callable

from sanic import Sanic
from sanic.worker.loader import AppLoader


def serve_factory(factory: Callable[[], Sanic], host: str, port: int, workers: int) -> None:
    """Serve until stopped; each worker process calls ``factory`` to build its app."""
    loader = AppLoader(factory=factory)
    app = loader.load()
    app.prepare(
        host=host,
        port=port,
        workers=workers,
        motd=False,
        access_log=False,
        single_process=workers == 1,
    )
    Sanic.serve(primary=app, app_loader=loader)
