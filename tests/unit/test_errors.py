"""The write side's error tree (``builder.core.errors``): the classes, their exit codes, the
hierarchy its docstring draws, and the translation of a full disk into a ``StorageError``."""

from __future__ import annotations

import ast
import errno
import importlib
import pkgutil
import re
import sqlite3
from pathlib import Path

import pytest
import redis

from builder.core import errors
from builder.core.errors import (
    FxevError,
    IntegrityError,
    RemoteError,
    StorageError,
    from_environment,
    translate_environment,
)

DOC = errors.__doc__ or ""
FXEV_PACKAGES = {"builder", "gateway", "tokens", "verifier", "demo", "bench"}
# Where each error the docstring names under "Where the package errors hang" is defined.
MODULES = (
    "builder.capture.backfill",
    "builder.capture.operator",
    "builder.core.settings",
    "builder.fleet.processes",
    "builder.ops.alerts",
    "builder.publish.log",
    "builder.publish.warc",
    "builder.sources.import_csv",
    "builder.tree.revlog",
    "tokens.store",
    "verifier.client",
    "verifier.command",
)


def import_every_module() -> None:
    """Every module of fxev's packages (but their ``__main__``s, which run), so that no error
    class escapes the checks for being in a module this test run happened not to load."""
    for top in sorted(FXEV_PACKAGES):
        package = importlib.import_module(top)
        for found in pkgutil.walk_packages(package.__path__, top + "."):
            if not found.name.endswith(".__main__"):
                importlib.import_module(found.name)


import_every_module()


def every_subclass(root: type) -> set[type]:
    found: set[type] = set()
    stack = [root]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return found


def drawn_tree() -> dict[str, str | None]:
    """Class name -> parent name, from the box drawing in the docstring."""
    block = DOC.split("The hierarchy", 1)[1].split("::", 1)[1].split("\n\n", 2)[1]
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in block.splitlines():
        match = re.match(r"^(\s*)((?:[│ ] {3})*)(?:[├└]── )?(\w+)", line)
        assert match, line
        depth = len(match.group(2)) // 4 + (1 if "── " in line else 0)
        name = match.group(3)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[name] = stack[-1][1] if stack else None
        stack.append((depth, name))
    return parents


def hung_errors() -> dict[str, list[str]]:
    """Kind -> the package errors listed under it in the docstring."""
    block = DOC.split("Where the package errors hang", 1)[1].split("::", 1)[1].split("\n\n")[1]
    kinds: dict[str, list[str]] = {}
    kind = ""
    for line in block.splitlines():
        head = re.match(r"^    (\w+)\s{2,}(.*)$", line)
        text = line
        if head:
            kind, text = head.group(1), head.group(2)
        kinds.setdefault(kind, [])
        kinds[kind] += [name.split(".")[-1] for name in re.findall(r"[\w.]*[A-Z]\w+", text)]
    return kinds


def package_error(name: str) -> type:
    for module in MODULES:
        found = getattr(importlib.import_module(module), name, None)
        if isinstance(found, type):
            return found
    raise AssertionError(f"{name} is named in the docstring but defined nowhere in {MODULES}")


def test_every_error_has_an_int_exit_code() -> None:
    classes = every_subclass(FxevError) | {FxevError}
    assert len(classes) > 20
    for cls in classes:
        assert isinstance(cls.exit_code, int) and cls.exit_code > 0, cls
        assert isinstance(cls.command, str), cls


def test_exit_2_is_fxev_verify_could_not_ask_and_everything_else_is_1() -> None:
    twos = {cls.__name__ for cls in every_subclass(FxevError) if cls.exit_code == 2}
    assert twos == {
        "RemoteError",
        "ClientError",
        "VerifyError",
        "VerifyUsageError",
        "MalformedAnswer",
    }
    assert FxevError.exit_code == 1


def test_the_core_classes_are_the_tree_the_docstring_draws() -> None:
    tree = drawn_tree()
    assert tree["FxevError"] is None
    assert set(tree) == {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, FxevError)
    }
    for name, parent in tree.items():
        cls = getattr(errors, name)
        expected = Exception if parent is None else getattr(errors, parent)
        assert cls.__bases__ == (expected,), (name, cls.__bases__)


def test_every_package_error_hangs_where_the_docstring_says() -> None:
    hung = hung_errors()
    assert set(hung) <= set(drawn_tree())
    listed = {name for names in hung.values() for name in names}
    for kind, names in hung.items():
        for name in names:
            assert issubclass(package_error(name), getattr(errors, kind)), (name, kind)
    defined_elsewhere = {
        cls.__name__ for cls in every_subclass(FxevError) if cls.__module__ != errors.__name__
    }
    assert defined_elsewhere == listed


@pytest.mark.parametrize(
    ("name", "old_base"),
    [
        ("SettingsError", ValueError),
        ("ImportFileError", ValueError),
        ("BackfillError", ValueError),
        ("OperatorError", ValueError),
        ("AlertError", ValueError),
        ("TokenError", ValueError),
        ("TreeCorruptError", RuntimeError),
        ("ExportError", RuntimeError),
        ("MalformedAnswer", package_error("VerifyError")),
    ],
)
def test_old_names_keep_their_old_base(name: str, old_base: type) -> None:
    assert issubclass(package_error(name), old_base)


def test_the_message_names_its_command_when_the_class_has_one() -> None:
    assert str(package_error("ClientError")("GET x: 404")) == "verify: GET x: 404"
    assert str(package_error("ExportError")("evidence e")) == "export warc: evidence e"
    assert str(package_error("SettingsError")("FXEV_X bad")) == "FXEV_X bad"


def test_the_core_imports_no_other_fxev_code() -> None:
    tree = ast.parse(Path(errors.__file__).read_text())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name.split(".")[0] in FXEV_PACKAGES}


# -- expected environmental failures --------------------------------------------------------


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS])
def test_a_full_disk_is_a_storage_error(code: int) -> None:
    error = from_environment(OSError(code, "No space", "/home/fxev/registry.sqlite"))
    assert isinstance(error, StorageError)
    assert str(error) == "cannot write /home/fxev/registry.sqlite: No space"


def test_sqlite_full_is_a_storage_error_and_a_corrupt_file_an_integrity_error() -> None:
    full = from_environment(sqlite3.OperationalError("database or disk is full"))
    assert isinstance(full, StorageError)
    assert str(full) == "cannot write the database: database or disk is full"
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("PRAGMA max_page_count = 1")
        with pytest.raises(sqlite3.OperationalError) as raised:
            conn.execute("CREATE TABLE t (x)")
    finally:
        conn.close()
    assert isinstance(from_environment(raised.value), StorageError)


def test_a_corrupt_database_is_an_integrity_error(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    path.write_bytes(b"not a database, " * 64)
    conn = sqlite3.connect(path)
    try:
        with pytest.raises(sqlite3.DatabaseError) as raised:
            conn.execute("SELECT * FROM sqlite_master")
    finally:
        conn.close()
    assert isinstance(from_environment(raised.value), IntegrityError)


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOENT, "No such file"),
        PermissionError(errno.EACCES, "denied"),
        sqlite3.OperationalError("no such table: x"),
        ValueError("x"),
    ],
)
def test_anything_else_is_left_alone(error: BaseException) -> None:
    assert from_environment(error) is None


def test_translate_environment_raises_the_storage_error_from_the_original() -> None:
    original = OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(StorageError) as raised, translate_environment():
        raise original
    assert raised.value.__cause__ is original
    with pytest.raises(FileNotFoundError), translate_environment():
        raise FileNotFoundError(errno.ENOENT, "gone")


def test_remote_error_is_exit_2() -> None:
    assert RemoteError.exit_code == 2


@pytest.mark.parametrize(
    ("error", "told"),
    [
        (redis.exceptions.ConnectionError("Error 111 connecting"), "cannot be reached"),
        (redis.exceptions.TimeoutError("Timeout reading"), "cannot be reached"),
        (redis.exceptions.AuthenticationError("invalid password"), "cannot be reached"),
        (redis.exceptions.ResponseError("WRONGTYPE Operation"), "refused the command"),
    ],
)
def test_a_redis_error_is_a_remote_error_naming_the_setting(
    error: BaseException, told: str
) -> None:
    """Fleet mode: whatever command asked Redis, its client's error is one line and exit 2."""
    with pytest.raises(RemoteError) as raised, translate_environment():
        raise error
    assert str(raised.value) == f"Redis at FXEV_REDIS_URL {told}: {error}"
    assert raised.value.__cause__ is error
