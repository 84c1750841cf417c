"""The command lines' argument parser: argparse's, with usage errors on one line.

Every CLI error is one line on stderr (docs/decisions.md#cli). argparse prints its usage block
before a usage error; :class:`OneLineParser` prints the error alone,
``fxev capture: error: argument --source: invalid choice: ...``, and exits 2. ``--help`` still
prints the usage. ``fxev`` passes it as every subcommand's ``parser_class``, so the commands the
gateway and the token store contribute use it too; ``python -m gateway``, ``make run``'s demo and
``make fleet`` use it as well.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")
