"""Running a Sanic app built by a factory in N worker processes: ``fxev serve`` and the benches.

Workers are supervised (docs/operating/ledger.md#workers): a worker that dies (killed, or
crashed) is started again within a second; so is a single one, which runs under a main process
too. Sanic's worker manager restarts a worker when asked
(auto-reload, its inspector) but not one that died, so :class:`Supervisor` joins its monitor loop,
which runs in the main process and syncs the workers' states from their processes every tenth of
a second: after each sync, a server worker found dead while the manager is not shutting down is
restarted there and then, by the manager's own restart. One worker is restarted at most once a
second, so one that cannot start is retried, not spun. A stop signal that arrives before every
worker acknowledged its start ends the manager's wait for them (Sanic's wait would otherwise
spin forever). The loop's step (``_sync_states``), its acknowledgement check and its shutdown
flag are the manager's internals (Sanic 25.12): :meth:`Supervisor.install` fails at start if
they are missing.

The workers' states live in a process of the manager's own (a ``multiprocessing`` manager).
When it dies (killed), no worker can be supervised any more: the gateway stops every worker
and exits 1, after one line in its log, so that its service manager starts it again (systemd's
``Restart=always``, docs/operating/fleet.md#hosts), where it ended in a traceback.

A worker keeps every stop signal (:func:`keep_stop_signals`). Sanic stops a worker by SIGINT
through its event loop's signal handler, and uvloop drops a signal that arrives while its loop is
paused: between the ``run_until_complete`` calls of a worker's start, one of which asks the
manager's state process over a pipe. A Ctrl-C sent as the gateway first answered could so leave
the worker serving, and ``fxev serve`` waiting for it, forever.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import signal
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from sanic import Sanic
from sanic.log import error_logger
from sanic.worker.constants import ProcessState
from sanic.worker.loader import AppLoader
from sanic.worker.manager import WorkerManager
from sanic.worker.process import WorkerProcess

if TYPE_CHECKING:
    from gateway.ledger.shipping import Shipper

RESTART_EVERY_S = 1.0  # the least time between two restarts of one worker
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # what Sanic stops a worker by
FIRST = 1_000  # the priority of a listener run before the app's own (priority 0)
STATE_LOST = threading.Event()  # the workers' state process died: stop, and exit 1
DEAD = (ProcessState.FAILED, ProcessState.COMPLETED)  # what a sync makes of a process gone
STATE_ERRORS = (BrokenPipeError, EOFError, ConnectionError)  # asking a state process that is gone


def serve_factory(
    factory: Callable[[], Sanic],
    host: str,
    port: int,
    workers: int,
    *,
    shipper: Shipper | None = None,
) -> None:
    """Serve until stopped; each worker process calls ``factory`` to build its app. A
    ``shipper`` (fleet mode) runs in the main process alone, one per host, not per worker: it
    starts with it and ships once more after every worker stopped
    (docs/operating/ledger.md#shipping)."""
    loader = AppLoader(factory=partial(worker_app, factory))
    app = loader.load()
    app.prepare(
        host=host,
        port=port,
        workers=workers,
        motd=False,
        access_log=False,
    )
    app.main_process_ready(supervise)  # even one worker runs under the main process, supervised
    if shipper is not None:
        app.main_process_start(lambda app: shipper.start())
        app.main_process_stop(lambda app: shipper.stop())  # after the workers were joined
    try:
        Sanic.serve(primary=app, app_loader=loader)
    except (BrokenPipeError, EOFError) as error:  # a manager's pipe, not a listener's socket
        # The state process died where the monitor loop does not ask it: the manager's join of
        # its workers, once they were killed together with it, or any step of a shutdown.
        Supervisor.report_state_lost(error)
    if STATE_LOST.is_set():
        raise SystemExit(1)


def worker_app(factory: Callable[[], Sanic]) -> Sanic:
    """The app ``factory`` builds, keeping every stop signal once it serves: from the first
    listener after its start (Sanic has set its own handlers then, and the loop runs), before
    any of the app's own, which a signal could otherwise interrupt."""
    app = factory()

    async def keep_signals(app: Sanic) -> None:
        keep_stop_signals(asyncio.get_running_loop(), partial(app.stop, terminate=False))

    app.listener(keep_signals, "after_server_start", priority=FIRST)
    return app


def keep_stop_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[], None]) -> None:
    """Call ``stop`` on ``loop`` at the first stop signal, even one that arrives while the
    loop is paused. The loop's own handler (uvloop's) is replaced by a plain one that queues
    ``stop`` on the loop: it runs at once if the loop runs, or as soon as it runs again. Later
    signals are ignored; the manager kills a worker on a second Ctrl-C. The signals are held
    back while the handlers change: one that came between the loop's removal (which puts back
    Python's default) and this one would otherwise end the worker at once."""
    signals = itertools.count()  # read and counted in one call, which a handler cannot split

    def on_signal(signum: int, frame: object) -> None:
        if next(signals) == 0:
            loop.call_soon_threadsafe(stop)

    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
            signal.signal(signum, on_signal)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # one held back comes now, to on_signal


def supervise(app: Sanic) -> None:
    """``main_process_ready``: supervise the workers of ``app``'s manager."""
    Supervisor(app.manager).install()


class Supervisor:
    """Restarts the manager's dead server workers, from its monitor loop."""

    def __init__(self, manager: WorkerManager) -> None:
        self.manager = manager
        self.restarted_at: dict[str, float] = {}

    def install(self) -> None:
        manager = self.manager
        internals = ("_sync_states", "_shutting_down", "_all_workers_ack")
        if not all(hasattr(manager, name) for name in internals):
            raise RuntimeError("Sanic's worker manager changed: workers cannot be supervised")
        sync = manager._sync_states
        all_acked = manager._all_workers_ack

        def sync_states() -> None:
            try:
                sync()
            except STATE_ERRORS as error:
                self.state_lost(error)
                return
            self.restart_dead()

        def acked_or_stopping() -> bool:
            # A stop signal before every worker said it was ready: the manager's wait for their
            # acknowledgements would spin forever, passing its own stop message back to itself,
            # and a worker that stopped never acknowledges. Stop waiting; the monitor loop then
            # reads that stop message and shuts down as usual.
            return manager._shutting_down or all_acked()

        manager._sync_states = sync_states  # type: ignore[method-assign]
        manager._all_workers_ack = acked_or_stopping  # type: ignore[method-assign]

    def state_lost(self, error: Exception) -> None:
        """The process holding the workers' states is gone: stop them all, and the gateway."""
        if self.report_state_lost(error):
            self.manager.monitor_publisher.send(None)  # the monitor loop's stop message
            self.manager.shutdown()

    @staticmethod
    def report_state_lost(error: Exception) -> bool:
        """Say once, in one line, that the state process is gone; whether this was the first."""
        if STATE_LOST.is_set():
            return False
        STATE_LOST.set()
        error_logger.error(
            "The workers' state process is gone (%s); stopping every worker, exit 1: start the"
            " gateway again (a service manager does)",
            error,
        )
        return True

    def restart_dead(self) -> None:
        manager = self.manager
        now = time.monotonic()
        for process in list(manager.transient_processes):
            if manager._shutting_down:
                return
            if WorkerProcess.SERVER_LABEL not in process.name or process.state not in DEAD:
                continue
            if now - self.restarted_at.get(process.name, -math.inf) < RESTART_EVERY_S:
                continue
            self.restarted_at[process.name] = now
            error_logger.error(
                "Worker %s [%s] died (exit code %s); starting it again",
                process.name,
                process.pid,
                process.exitcode,
            )
            manager.restart(process_names=[process.name])
            if manager._shutting_down:  # a stop signal came during the restart
                process.terminate()
