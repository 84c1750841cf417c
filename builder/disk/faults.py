"""Named crash points for the crash-safety tests.

``FXEV_FAULT_KILL_AT=<name>`` makes the process SIGKILL itself when it reaches that point, so a
test can prove that a capture killed anywhere leaves the registry at the previous revision or the
next, never between. Unset (always, outside those tests) it costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

# Points a capture passes through, in order; BUILD_POINTS are fxev build's.
POINTS = (
    "after_fetch",
    "after_blob_write",
    "after_begin",
    "before_seal",
    "before_commit",
    "after_commit",
)
BUILD_POINTS = (
    "build_after_revision",
    "build_staged_write",
    "build_explorer_map",
    "build_before_pointer",
)


def crash_point(name: str) -> None:
    if os.environ.get("FXEV_FAULT_KILL_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
