"""wrk, the bounded load generator: one run (time- and connection-bound), its output parsed.

The command line and the parsing are pure and live in ``tests.support.wrk``, where tests may
import them.
"""

from __future__ import annotations

import subprocess

from tests.support.wrk import WrkError, WrkResult, parse_wrk_output, wrk_command


def run_wrk(
    url: str, seconds: int, connections: int, threads: int, headers: dict[str, str]
) -> WrkResult:
    """One run, bounded by ``seconds`` (and killed if it overstays them by 30 s)."""
    done = subprocess.run(
        wrk_command(url, seconds, connections, threads, headers),
        capture_output=True,
        text=True,
        timeout=seconds + 30,
        check=False,
    )
    if done.returncode != 0:
        raise WrkError(f"wrk exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return parse_wrk_output(done.stdout)
