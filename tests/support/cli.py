"""What one run of the real ``fxev`` command gave: its exit code and both streams, for tests
that drive the console script as a subprocess."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str

    @property
    def last(self) -> dict[str, Any]:
        """The JSON object every command prints as its last line on stdout."""
        return json.loads(self.stdout.splitlines()[-1])


Fxev = Callable[..., Ran]
