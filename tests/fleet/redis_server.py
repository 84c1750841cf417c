"""A real Redis for the fleet tests, as ``make fleet`` runs it
(:func:`builder.fleet.processes.redis_service`): Debian's ``redis-server``
(``tests/fleet/install-redis.sh``) on a free 127.0.0.1 port, persisting to a temporary folder
(AOF, ``appendfsync always``, no RDB snapshots), stopped by its PID. ``stop`` then ``start``
restarts it on the same port and folder, so what it held comes back from its AOF.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import redis

from builder.fleet.processes import Service, free_ports, redis_service


class RedisServer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_ports(1)[0]
        self.service: Service | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed (run tests/fleet/install-redis.sh)")
        if self.service is None:
            self.service = redis_service(self.folder, self.port)
        self.service.start()

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop()  # SIGTERM: redis-server flushes its AOF and exits

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2)
