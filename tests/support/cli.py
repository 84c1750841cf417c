"""Running the real ``fxev`` command as a subprocess, and what one run gave: its exit code and
both streams."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FXEV = Path(sys.executable).with_name("fxev")  # the console script of this environment
TIMEOUT_S = 60


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

CHAIN_LINE = re.compile(r"revision chain \(1\.\.(\d+)\): ok")


def verified_head(stdout: str) -> int:
    """The head revision a clean ``fxev registry verify`` walked to: its chain's plain line
    ``revision chain (1..N): ok``, after which the last line is ``{"ok": true, "findings": []}``."""
    *lines, last = stdout.splitlines()
    assert json.loads(last) == {"ok": True, "findings": []}, stdout
    [head] = [int(m.group(1)) for m in map(CHAIN_LINE.fullmatch, lines) if m]
    return head


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any ``FXEV_*`` setting, plus ``extra``."""
    return {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")} | extra


def run(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> Ran:
    """Run ``argv`` (``fxev`` or ``python -m ...``) in ``cwd`` with ``env``, bounded in time."""
    proc = subprocess.run(
        [str(part) for part in argv],
        cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    return Ran(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
