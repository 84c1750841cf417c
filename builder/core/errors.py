"""The write side's one error tree: every error that reaches ``fxev`` is an :class:`FxevError`.

Every main (``fxev``, ``python -m gateway``, the demo) runs through one handler,
:func:`reported`: it prints ``fxev: <the error>`` as one line on stderr and exits with the
error's ``exit_code``. A class carries its exit code, and may name the
command its message belongs to (``command``: ``fxev: verify: ...``, ``fxev: export warc: ...``).
Anything not in this tree is a bug, and still ends in a traceback.

The hierarchy (the classes of this module; each package's own errors subclass one of them)::

    FxevError                    exit 1: the root
    ├── UsageError               the operator's request cannot be used: an argument, a date, a file
    │   ├── NotFound             what it names does not exist or cannot be read: a file, an id
    │   ├── Conflict             well formed, but the current state refuses it (already revoked)
    │   └── PathError            a path it needs is unusable: a file where a folder is due
    ├── ConfigurationError       an ``FXEV_*`` setting cannot be used
    ├── StorageError             the disk refused a write: full, over quota, a size limit, read-only
    ├── IntegrityError           stored bytes disagree with their hashes: a corrupt tree or registry
    └── RemoteError              exit 2: the API could not be asked, or answered out of spec

Where the package errors hang (each keeps its name and, where callers rely on it, its old base:
``except ValueError`` still catches ``SettingsError``)::

    UsageError      builder.capture.backfill.BackfillError, builder.capture.operator.OperatorError,
                    builder.sources.import_csv.ImportFileError, builder.ops.alerts.AlertError,
                    tokens.store.TokenError, verifier.command.VerifyError (exit 2),
                    verifier.command.VerifyUsageError (exit 2)
    NotFound        ImportFileUnreadable, SavedFileUnreadable, AlertNotFound, TokenNotFound
    Conflict        AlertConflict, TokenConflict, builder.publish.log.HistoryRewritten,
                    builder.publish.log.KeyChanged, builder.publish.log.NotTheLogsKey,
                    builder.publish.log.SigningRecordLost, builder.fleet.processes.FleetRunning
    ConfigurationError  builder.core.settings.SettingsError
    StorageError    builder.publish.warc.ExportWriteError, and what :func:`from_environment` makes
    IntegrityError  builder.tree.revlog.TreeCorruptError, builder.publish.warc.ExportError
    RemoteError     verifier.client.ClientError, verifier.command.MalformedAnswer
    FxevError       builder.fleet.processes.StartFailed (``make fleet``: a process did not start)

A full disk is expected, not a bug: :func:`translate_environment` turns an ``OSError`` with
``ENOSPC``, ``EDQUOT``, ``EFBIG`` or ``EROFS`` and SQLite's "database or disk is full" (and its
I/O and read-only errors) into a :class:`StorageError`, and SQLite's corrupt-file errors into an
:class:`IntegrityError` (:func:`database_at` names the file, where a store is opened). Any other
``OSError`` naming a path that cannot be used as it is (:data:`PATH_ERRNOS`: a home under a
plain file, a folder given for a file, no permission) is a :class:`PathError` naming it. The
registry's writes are transactions and every file is written under a new name first, so such a
failure leaves the registry as it was. In fleet mode, an error of the Redis client (redis-py's,
told by its module, as this module imports no client library) is a :class:`RemoteError`, exit 2:
Redis could not be reached or refused the command, so no command's work was done.

Errors that are control flow stay outside the tree: ``FetchFailure`` (capture), and
``SourceFormatError``/``InvariantError`` (sources) become recorded ``fallo`` outcomes;
``ReparseRefused``/``ReparseMismatch`` become the verifier's findings. None reaches ``fxev``.

Pure: imports no other fxev code.
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar


class FxevError(Exception):
    """An error ``fxev`` reports as one line on stderr, exiting with ``exit_code``."""

    exit_code: ClassVar[int] = 1
    #: The command the message belongs to, printed before it ("verify"); empty: none.
    command: ClassVar[str] = ""

    def __str__(self) -> str:
        message = super().__str__()
        return f"{self.command}: {message}" if self.command else message


class UsageError(FxevError):
    """The operator's request cannot be used as given: an argument, a date, a file's content."""


class NotFound(UsageError):
    """What the request names does not exist or cannot be read: a file, an alert, a token."""


class Conflict(UsageError):
    """The request is well formed but the current state refuses it (a token already revoked)."""


class ConfigurationError(FxevError):
    """An ``FXEV_*`` setting cannot be used."""


class PathError(UsageError):
    """A path a command needs cannot be used as it is: a file where a folder is due, a folder
    where a file is, no permission."""


class StorageError(FxevError):
    """The disk refused a write: full, over quota, a file size limit, read-only, an I/O error."""


class IntegrityError(FxevError):
    """Stored bytes disagree with their hashes or records: a corrupt tree, registry or blob."""


class RemoteError(FxevError):
    """The API could not be asked (network, 401, 404) or answered out of spec: no verdict."""

    exit_code = 2


# -- expected environmental failures -----------------------------------------------------------

STORAGE_ERRNOS = frozenset(
    code
    for code in (
        errno.ENOSPC,
        getattr(errno, "EDQUOT", None),
        errno.EFBIG,
        errno.EROFS,
    )
    if code is not None
)
# What an operator's path can be that a command cannot use: a file where a folder is due (or the
# reverse), no permission, a loop of links, a name too long. Any other OSError (a file gone
# between two steps, a bad descriptor) is a bug, and stays a traceback.
PATH_ERRNOS = frozenset(
    (
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EACCES,
        errno.EPERM,
        errno.ELOOP,
        errno.ENAMETOOLONG,
        errno.EEXIST,  # a folder to make where something else is (a dangling link on the way)
    )
)
# SQLite's primary result codes (the low byte of an extended code).
SQLITE_READONLY, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_NOTADB = 8, 10, 11, 13, 26
_SQLITE_STORAGE = {SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL}
_SQLITE_CORRUPT = {SQLITE_CORRUPT, SQLITE_NOTADB}
# redis-py's errors for a server it could not ask (refused, timed out, loading, a bad password).
_REDIS_UNREACHABLE = frozenset({"ConnectionError", "TimeoutError"})


def is_redis_error(error: BaseException) -> bool:
    """An error of redis-py's, told by its module so that the core never imports the client."""
    return type(error).__module__.startswith("redis.")


def from_environment(error: BaseException) -> FxevError | None:
    """The error an expected environmental failure stands for, or None for anything else."""
    if is_redis_error(error):
        unreachable = any(kind.__name__ in _REDIS_UNREACHABLE for kind in type(error).__mro__)
        told = "cannot be reached" if unreachable else "refused the command"
        return RemoteError(f"Redis at FXEV_REDIS_URL {told}: {error}")
    if isinstance(error, OSError) and error.errno in STORAGE_ERRNOS:
        where = f" {error.filename}" if error.filename else ""
        return StorageError(f"cannot write{where}: {error.strerror or error}")
    if isinstance(error, OSError) and error.errno in PATH_ERRNOS and error.filename is not None:
        return PathError(f"cannot use {error.filename}: {error.strerror or error}")
    if isinstance(error, sqlite3.DatabaseError):
        if _primary(error) in _SQLITE_STORAGE or "database or disk is full" in str(error):
            return StorageError(f"cannot write the database: {error}")
        if _primary(error) in _SQLITE_CORRUPT:
            return IntegrityError(f"the database is corrupt: {error}")
    return None


def _primary(error: sqlite3.DatabaseError) -> int | None:
    """SQLite's primary result code of ``error`` (the low byte of its extended code)."""
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


@contextlib.contextmanager
def database_at(path: Path) -> Iterator[None]:
    """While a SQLite file at ``path`` is opened: one that is not a database, or is corrupt, is
    an :class:`IntegrityError` naming it (SQLite's own message names no file)."""
    try:
        yield
    except sqlite3.DatabaseError as error:
        if _primary(error) not in _SQLITE_CORRUPT:
            raise
        raise IntegrityError(f"{path} is not a usable database: {error}") from error


def reported(command: Callable[[], int]) -> int:
    """``command``'s exit code, as every main runs it (``fxev``, ``python -m gateway``, the demo):
    an :class:`FxevError`, a full disk among them (:func:`translate_environment`), is one line
    on stderr, ``fxev: <the error>``, and the error's exit code; anything else is a bug and
    ends in a traceback."""
    try:
        with translate_environment():
            return command()
    except FxevError as error:
        print(f"fxev: {error}", file=sys.stderr)
        return error.exit_code


@contextlib.contextmanager
def translate_environment() -> Iterator[None]:
    """Re-raise an expected environmental failure (see :func:`from_environment`) as its
    :class:`FxevError`; anything else goes through untouched."""
    try:
        yield
    except Exception as error:
        translated = from_environment(error)
        if translated is None:
            raise
        raise translated from error
