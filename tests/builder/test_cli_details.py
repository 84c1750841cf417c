"""The operator's command line from the outside, in detail: DECISIONS sections 2 and 3 and the
newcomer path, aimed at what tests/builder/test_cli_errors.py, test_newcomer_paths.py,
test_decisions_rules.py and tests/docs/ do not reach.

Every check runs the installed ``fxev`` console script (or ``python -m demo``, as
``make run`` does) as a subprocess, with its own temporary ``FXEV_HOME``/``FXEV_SITE``; gateways
run on free 127.0.0.1 ports and are stopped by their PID. Each test quotes the rule it holds the
project to in its docstring.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.cli import FXEV, Ran, clean_env, run
from tests.support.clock import clear_of_lima_midnight
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-09-20T13:05:00-05:00"  # a Sunday in Lima
GOOD_CSV = "fecha_serie,compra,venta\n2026-09-17,3.354,3.362\n2026-09-18,3.355,3.363\n"
CAPTURE_KEYS = {"revision", "outcome", "observacion_id", "observaciones", "alerta", "alertas"}


# -- helpers ---------------------------------------------------------------------------------


def assert_one_line_error(ran: Ran, code: int | None = 1) -> str:
    """The failure shape of section 3: a non-zero exit (``code`` if given), nothing on stdout,
    exactly one line on stderr, never a traceback. Returns the line."""
    assert ran.code != 0, ran
    if code is not None:
        assert ran.code == code, ran
    assert "Traceback" not in ran.stderr, ran.stderr
    assert ran.stdout == "", ran
    assert len(ran.stderr.splitlines()) == 1, ran.stderr
    return ran.stderr.rstrip("\n")


def tree(path: Path) -> list[str]:
    """Every path under ``path`` (relative), to see that a refused command changed nothing."""
    if not path.exists():
        return []
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def head_revision(home: Path) -> int:
    import sqlite3

    with contextlib.closing(sqlite3.connect(home / "registry.sqlite")) as conn:
        row = conn.execute("SELECT max(revision) FROM revisions").fetchone()
    return int(row[0] or 0)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return tmp_path / "site"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def env(home: Path, site: Path) -> dict[str, str]:
    return clean_env(FXEV_HOME=str(home), FXEV_SITE=str(site), FXEV_NOW=NOW)


def fxev(work: Path, env: dict[str, str], *args: str, **extra: str) -> Ran:
    return run([FXEV, *args], work, env | extra)


@pytest.fixture
def seeded(work: Path, env: dict[str, str], home: Path) -> int:
    """A home holding one import (revision 1), built, with a token store: the revision."""
    (work / "seed.csv").write_text(GOOD_CSV, encoding="utf-8")
    ran = fxev(work, env, "import", "seed.csv", "--actor", "ana", "--justification", "seed")
    assert ran.code == 0, ran
    built = fxev(work, env, "build")
    assert built.code == 0, built
    issued = fxev(work, env, "token", "issue", "seed")
    assert issued.code == 0, issued
    return head_revision(home)


# == Section 3: a malformed import CSV is refused whole, naming the problem ===================


MALFORMED_CSV = {
    "a column named twice": "fecha_serie,compra,venta,compra\n2026-09-09,3.354,3.362,3.100\n",
    "a row with more fields than the header": (
        "fecha_serie,compra,venta\n2026-09-09,3.354,3.362,3.100\n"
    ),
    "an ISO week date": "fecha_serie,compra,venta\n2026-W37-3,3.354,3.362\n",
    "a basic-format date": "fecha_serie,compra,venta\n20260909,3.354,3.362\n",
}


@pytest.mark.parametrize("name", sorted(MALFORMED_CSV))
def test_a_malformed_import_csv_is_one_line_and_creates_no_home(
    work: Path, env: dict[str, str], home: Path, name: str
) -> None:
    """DECISIONS 3: "`fxev import FILE.csv ...` | `importado` observations; CSV header
    `fecha_serie,compra,venta` (optional `moneda,serie` ...)" and "errors go to stderr with a
    non-zero exit and change nothing". A header that names `compra` twice (which value is
    compra?), a row carrying a field the header does not name, and a `fecha_serie` not written
    YYYY-MM-DD (the API's and every other command's date form) are malformed input: one line,
    exit 1, no home. (At commit 0e80f33 all four were imported; the duplicated column
    silently took the LAST value, 3.100, and the extra field was dropped.)"""
    (work / "bad.csv").write_text(MALFORMED_CSV[name], encoding="utf-8")
    ran = fxev(work, env, "import", "bad.csv", "--actor", "a", "--justification", "j")
    message = assert_one_line_error(ran)
    assert message.startswith("fxev: "), message
    assert not home.exists(), tree(home)


def test_a_non_utf8_import_is_one_line_and_creates_no_home(
    work: Path, env: dict[str, str], home: Path
) -> None:
    """DECISIONS 3: "errors go to stderr with a non-zero exit and change nothing"; the brief's
    non-UTF-8 file: a Latin-1 byte and a UTF-16 file are refused, no home made."""
    (work / "latin1.csv").write_bytes(b"fecha_serie,compra,venta\n2026-09-16,3.35\xe9,3.362\n")
    (work / "utf16.csv").write_bytes(GOOD_CSV.encode("utf-16"))
    for name in ("latin1.csv", "utf16.csv"):
        ran = fxev(work, env, "import", name, "--actor", "a", "--justification", "j")
        assert "UTF-8" in assert_one_line_error(ran)
    assert not home.exists()


def test_a_duplicate_date_in_an_import_changes_an_existing_registry_not_at_all(
    work: Path, env: dict[str, str], home: Path, seeded: int
) -> None:
    """DECISIONS 3: errors "change nothing": on a home with a registry, a refused import (a date
    twice) leaves the revision and every file of the home as they were."""
    before = tree(home)
    (work / "dup.csv").write_text(
        "fecha_serie,compra,venta\n2026-09-14,3.354,3.362\n2026-09-14,3.354,3.362\n"
    )
    ran = fxev(work, env, "import", "dup.csv", "--actor", "a", "--justification", "j")
    assert "line 3" in assert_one_line_error(ran)
    assert head_revision(home) == seeded
    assert tree(home) == before


# == Section 3: annotate --fecha is a date YYYY-MM-DD ==========================================


@pytest.mark.parametrize("fecha", ["2026-W37-2", "20260901", "2026-09-1"])
def test_annotate_refuses_a_fecha_not_written_yyyy_mm_dd(
    work: Path, env: dict[str, str], home: Path, fecha: str
) -> None:
    """DECISIONS 3: "`fxev annotate --fecha D ...`" with D a date as the table writes them
    (`--expires YYYY-MM-DD`; `fxev annotate --help` says "--fecha FECHA  YYYY-MM-DD"; backfill
    refuses `--from 2026-W36-1` as "not a date YYYY-MM-DD"). An ISO week date or a basic-format
    date is a usage error, one line, and no home. (At commit 0e80f33 `2026-W37-2` was recorded as an
    annotation of 2026-09-08 and `20260901` as one of 2026-09-01.)"""
    ran = fxev(work, env, "annotate", "--fecha", fecha, "--texto", "t", "--actor", "a",
               "--justification", "j")  # fmt: skip
    assert fecha in assert_one_line_error(ran)
    assert not home.exists(), tree(home)


# == Section 2: an FXEV_* variable with a bad value is one line, and changes nothing ==========


def test_a_malformed_redis_url_is_one_line_and_records_nothing(
    work: Path, env: dict[str, str], home: Path, seeded: int
) -> None:
    """DECISIONS 2 (`FXEV_REDIS_URL` | fleet mode ...) and 3: "errors go to stderr with a
    non-zero exit and change nothing ... Every CLI error ... is one line on stderr, never a
    traceback." A `FXEV_REDIS_URL` that is not a Redis URL is a bad setting, refused like
    `FXEV_RATE_LIMIT_PER_MIN=abc` before anything is written. (Formerly `import` writes its
    revision, THEN dies with redis-py's ValueError traceback, printing no result.)"""
    (work / "more.csv").write_text("fecha_serie,compra,venta\n2026-09-15,3.354,3.362\n")
    ran = fxev(work, env, "import", "more.csv", "--actor", "a", "--justification", "j",
               FXEV_REDIS_URL="nonsense")  # fmt: skip
    assert "FXEV_REDIS_URL" in assert_one_line_error(ran)
    assert head_revision(home) == seeded, "the refused command wrote a revision"


@pytest.mark.parametrize("args", [("token", "list"), ("alerts", "list"), ("build",)])
def test_a_malformed_redis_url_is_one_line_for_reading_commands(
    work: Path, env: dict[str, str], seeded: int, args: tuple[str, ...]
) -> None:
    """DECISIONS 3: "Every CLI error ... is one line on stderr, never a traceback." (Formerly:
    `ValueError: Redis URL must specify one of the following schemes` with a traceback.)"""
    ran = fxev(work, env, *args, FXEV_REDIS_URL="nonsense")
    assert "FXEV_REDIS_URL" in assert_one_line_error(ran)


def test_a_malformed_s3_endpoint_is_one_line(work: Path, env: dict[str, str], seeded: int) -> None:
    """DECISIONS 2 (`FXEV_S3_ENDPOINT` | endpoint of an S3-compatible store) and 3: "Every CLI
    error ... is one line on stderr, never a traceback". (Formerly `fxev publish` with
    FXEV_S3_ENDPOINT=notaurl ends in botocore's `ValueError: Invalid endpoint` traceback.)"""
    ran = fxev(work, env, "publish", FXEV_STORE_URL="s3://bucket/prefix",
               FXEV_S3_ENDPOINT="notaurl", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y",
               AWS_REGION="us-east-1")  # fmt: skip
    assert "FXEV_S3_ENDPOINT" in assert_one_line_error(ran, code=None)


@pytest.mark.parametrize(
    ("variable", "args"),
    [
        ("FXEV_HOME", ("import", "seed.csv", "--actor", "a", "--justification", "j")),
        ("FXEV_HOME", ("token", "issue", "acme")),
        ("FXEV_HOME", ("capture", "--url", "http://127.0.0.1:9/x")),
        ("FXEV_SITE", ("build",)),
    ],
    ids=["import", "token-issue", "capture", "build"],
)
def test_a_home_or_site_that_is_a_file_is_one_line(
    work: Path, env: dict[str, str], seeded: int, variable: str, args: tuple[str, ...]
) -> None:
    """DECISIONS 2 (`FXEV_HOME` | data folder; `FXEV_SITE` | the static tree) and 3: "Every CLI
    error ... is one line on stderr, never a traceback." A setting that names a regular file
    where a folder is needed is the operator's mistake, named in one line. (Formerly:
    `FileExistsError: [Errno 17] File exists` with a traceback.)"""
    plain = work / "plain-file"
    plain.write_text("not a folder\n")
    (work / "seed.csv").write_text(GOOD_CSV)
    ran = fxev(work, env, *args, **{variable: str(plain)})
    assert str(plain) in assert_one_line_error(ran, code=None)
    assert plain.read_text() == "not a folder\n"


@pytest.mark.parametrize(
    ("variable", "args"),
    [
        ("FXEV_HOME", ("capture", "--url", "http://127.0.0.1:9/x")),
        ("FXEV_SITE", ("build",)),
        ("FXEV_SITE", ("tick",)),
    ],
    ids=["home-capture", "site-build", "site-tick"],
)
def test_a_home_or_site_that_is_a_dangling_link_is_one_line_and_records_nothing(
    work: Path,
    env: dict[str, str],
    home: Path,
    seeded: int,
    variable: str,
    args: tuple[str, ...],
) -> None:
    """A setting that names a link to a folder that is not there (a volume not mounted) cannot
    be made a folder: one line naming it, before a tick records its capture. (Formerly:
    `FileExistsError` with a traceback, after the tick's capture was recorded.)"""
    link = work / "dangling"
    link.symlink_to(work / "not-mounted" / "site")
    before = head_revision(home)
    extra = {"FXEV_SOURCES": "taxauth_txt", "FXEV_TAXAUTH_URL": "http://127.0.0.1:9/x"}
    ran = fxev(work, env, *args, **{variable: str(link)}, **extra)
    assert str(link) in assert_one_line_error(ran, code=None)
    assert not (work / "not-mounted").exists()
    assert head_revision(home) == before


# == Section 3: every command on a missing home ===============================================


MISSING_HOME = {
    "log key": (("log", "key"), "h"),
    "log proof": (("log", "proof", "00000000-0000-4000-8000-000000000000"), "s"),
    "edge config": (("edge", "config"), "h/tokens.sqlite"),
    "alerts list --all": (("alerts", "list", "--all"), "h/registry.sqlite"),
    "requests show (empty id)": (("requests", "show", ""), "h/ledger"),
}


@pytest.mark.parametrize("name", sorted(MISSING_HOME))
def test_commands_not_in_the_refusing_table_also_refuse_a_missing_home(
    tmp_path: Path, name: str
) -> None:
    """DECISIONS 3: "A command refuses a home that lacks the store it reads ... One line naming
    the resolved path, exit 1; such a command never creates an empty home." For the commands
    test_newcomer_paths.py does not list (log key/proof, edge config, alerts list --all, an
    empty request id)."""
    args, missing = MISSING_HOME[name]
    env = clean_env(FXEV_HOME=str(tmp_path / "h"), FXEV_SITE=str(tmp_path / "s"))
    ran = run([FXEV, *args], tmp_path, env)
    assert str(tmp_path / missing) in assert_one_line_error(ran)
    assert list(tmp_path.iterdir()) == []


def test_verify_without_an_id_or_response_names_what_is_missing(tmp_path: Path) -> None:
    """DECISIONS 3: "`fxev verify OBSERVACION_ID --url BASE_URL` or `fxev verify --response FILE
    --url BASE_URL`"; the brief: a clear one-line error naming the problem. Given neither, the
    message must not say the operator gave both. (Formerly: "verify takes an OBSERVACION_ID or
    --response FILE, not both" when neither was given.)"""
    ran = run([FXEV, "verify", "--url", "http://127.0.0.1:9"], tmp_path,
              clean_env(FXEV_TOKEN="t"))  # fmt: skip
    message = assert_one_line_error(ran, code=2)
    assert "not both" not in message, message


# == Section 3: `fxev serve` errors are one line ==============================================


def test_fxev_serve_on_a_taken_port_is_one_line_exit_1(
    work: Path, env: dict[str, str], seeded: int, taken_port: int
) -> None:
    """DECISIONS 3: "a taken port is one line on stderr and exit 1" (said of `make run`, whose
    demo checks it) and "Every CLI error ... is one line on stderr, never a traceback." The
    operator's own `fxev serve --port P` on a taken port must say so in one line too. (Formerly:
    Sanic's `OSError: [Errno 98] Address already in use` with a traceback.)"""
    ran = fxev(work, env, "serve", "--port", str(taken_port), "--workers", "1")
    assert str(taken_port) in assert_one_line_error(ran)


@pytest.mark.parametrize(
    "args", [("--port", "70000"), ("--port", "-1"), ("--workers", "0")], ids=str
)
def test_fxev_serve_refuses_an_impossible_port_or_worker_count_in_one_line(
    work: Path, env: dict[str, str], seeded: int, args: tuple[str, ...]
) -> None:
    """DECISIONS 3: "Every CLI error ... is one line on stderr, never a traceback." (Formerly:
    `OverflowError: bind(): port must be 0-65535.` / `RuntimeError: Cannot serve with no
    workers`, each with a traceback.)"""
    ran = fxev(work, env, "serve", *args)
    assert_one_line_error(ran, code=None)


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_make_run_refuses_an_impossible_port_in_one_line_before_any_token_changes(
    tmp_path: Path, port: str
) -> None:
    """DECISIONS 3: "`make run PORT=8001` serves on another port; a taken port is one line on
    stderr and exit 1 **before** any token is revoked or issued" and "Every CLI error ... never
    a traceback". `make run PORT=70000` (the demo's `--port 70000`) is the same mistake.
    (Formerly: `OverflowError: bind(): port must be 0-65535.` with a traceback from
    demo/__init__.py check_port.)"""
    env = clean_env(FXEV_HOME=str(tmp_path / "var"), FXEV_SITE=str(tmp_path / "site_out"))
    ran = run([sys.executable, "-m", "demo", "--serve", "--port", port], tmp_path, env)
    assert port in assert_one_line_error(ran, code=None)
    assert not (tmp_path / "var").exists()


# == Section 3: `make run` rotates the demo token =============================================


def stop_started(proc: subprocess.Popen[Any]) -> None:
    """Stop a process this module started, by its PID (its session's group if it hangs)."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the group of the process we started
            proc.wait(timeout=10)


class Demo:
    """``python -m demo --serve --port P`` (what ``make run PORT=P`` runs), stopped by
    its PID (it execs the gateway, which keeps the PID)."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "demo", "--serve", "--port", str(self.port)],
            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True, text=True,
        )  # fmt: skip
        self.stdout: list[str] = []

    def token(self) -> str:
        """The demo token, once the ready-to-paste curl line naming it was printed too."""
        assert self.proc.stdout is not None
        token = None
        for line in self.proc.stdout:
            self.stdout.append(line)
            found = re.search(r"Demo token \(shown once\): (\S+)", line)
            if found:
                token = found.group(1)
            if token is not None and line.startswith("curl "):
                assert f"Bearer {token}'" in line, line
                return token
        raise AssertionError(f"no demo token and curl line printed: {self.stdout}")

    def get(self, token: str) -> int:
        url = f"http://127.0.0.1:{self.port}/v1/rates/latest?currency=USD&series=publicado"
        deadline = time.monotonic() + 30
        while True:
            try:
                return requests.get(
                    url, headers={"Authorization": f"Bearer {token}"}, timeout=5
                ).status_code
            except requests.RequestException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def stop(self) -> None:
        stop_started(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def test_make_run_twice_revokes_the_previous_demo_token_and_issues_a_new_one(
    tmp_path: Path,
) -> None:
    """DECISIONS 3: "`make run` ... seeds an empty `FXEV_HOME` ..., builds, revokes the previous
    demo token and issues a new one (printed, with a ready-to-paste `curl`)". Run twice on free
    ports: the first token works, then after the second run it gets 401 and the new one 200;
    `token list` shows exactly one active `demo` token. With `FXEV_NOW` unset each of the demo's
    writes has its own `ts_commit` (DECISIONS 4), so `/v1/revisions?at=` reaches every revision
    (formerly all shared the seed's first instant, and only the last could be reached)."""
    env = clean_env(FXEV_HOME=str(tmp_path / "var"), FXEV_SITE=str(tmp_path / "site_out"))
    first = Demo(tmp_path, env)
    try:
        old = first.token()
        assert first.get(old) == 200
        with contextlib.closing(sqlite3.connect(tmp_path / "var" / "registry.sqlite")) as conn:
            commits = dict(conn.execute("SELECT revision, ts_commit FROM revisions").fetchall())
        assert len(commits) > 1 and len(set(commits.values())) == len(commits), commits
        for revision, ts_commit in commits.items():
            found = requests.get(
                f"http://127.0.0.1:{first.port}/v1/revisions",
                params={"at": ts_commit},
                headers={"Authorization": f"Bearer {old}"},
                timeout=5,
            )
            assert found.json()["revision"] == revision, (ts_commit, found.text)
    finally:
        first.stop()
    second = Demo(tmp_path, env)
    try:
        new = second.token()
        assert new != old
        assert second.get(new) == 200
        assert second.get(old) == 401
    finally:
        second.stop()
    listed = run([FXEV, "token", "list"], tmp_path, env)
    states = [(t["name"], t["state"]) for t in listed.last["items"]]
    assert states.count(("demo", "active")) == 1, states


# == Section 2 and 3 through a real gateway: FXEV_NOW, revocation, requests show ============


class Gateway:
    """``fxev serve`` on a free port, stopped by its PID."""

    def __init__(self, cwd: Path, env: dict[str, str], workers: int = 2) -> None:
        self.port = free_port()
        self.log = cwd / f"serve-{self.port}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(FXEV), "serve", "--port", str(self.port), "--workers", str(workers)],
                cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(self.url("/v1/health/live"), timeout=3).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise AssertionError(self.log.read_text())
            time.sleep(0.2)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def latest(self, token: str) -> requests.Response:
        return requests.get(
            self.url("/v1/rates/latest?currency=USD&series=publicado"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=5,
        )

    def stop(self) -> None:
        stop_started(self.proc)


def issue(work: Path, env: dict[str, str], *args: str) -> tuple[str, str]:
    ran = fxev(work, env, "token", "issue", *args)
    assert ran.code == 0, ran
    first, token = ran.stdout.splitlines()
    return json.loads(first)["id"], token


def test_fxev_now_moves_neither_the_day_limit_nor_the_ledger_time_nor_token_expiry(
    work: Path, env: dict[str, str], seeded: int, home: Path
) -> None:
    """DECISIONS 2: "The rate limiter, the ledger's time and token expiry always use the real
    clock, never `FXEV_NOW`." A gateway with FXEV_NOW in 2031 still accepts a token expiring
    tomorrow (real clock), stamps its ledger with today's real date, and a per-day limit of 3
    reached under FXEV_NOW=2031-01-01 is still reached after a restart under FXEV_NOW=2031-06-01
    (a different day only by FXEV_NOW)."""
    tomorrow = (datetime.now(UTC).date() + timedelta(days=2)).isoformat()
    _, token = issue(work, env, "acme", "--expires", tomorrow)
    clear_of_lima_midnight(120)  # both gateways' runs in one day in Lima
    limited = env | {"FXEV_RATE_LIMIT_PER_DAY": "3", "FXEV_NOW": "2031-01-01T12:00:00-05:00"}
    gateway = Gateway(work, limited, workers=1)
    try:
        assert [gateway.latest(token).status_code for _ in range(4)] == [200, 200, 200, 429]
    finally:
        gateway.stop()
    gateway = Gateway(work, limited | {"FXEV_NOW": "2031-06-01T12:00:00-05:00"}, workers=1)
    try:
        refused = gateway.latest(token)
        assert refused.status_code == 429, refused.text
    finally:
        gateway.stop()
    stamps = [
        json.loads(line)["ts"]
        for path in sorted((home / "ledger").glob("*.jsonl"))
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    assert stamps, "no ledger line"
    today_utc = datetime.now(UTC).date()
    real_days = {today_utc.isoformat(), (today_utc - timedelta(days=1)).isoformat()}
    assert all(stamp[:10] in real_days for stamp in stamps), stamps


def test_revocation_fails_the_very_next_request_on_every_worker_and_requests_show_finds_it(
    work: Path, env: dict[str, str], seeded: int
) -> None:
    """DECISIONS 3: "`fxev token revoke ID` ... revocation takes effect on the very next
    request, without restart" and "`fxev requests show ID` | ledger entries whose
    `X-Request-Id` or body `request_id` is ID | `{"entries": [...]}`, oldest first; exit 1 if
    none". Against `fxev serve` with 2 workers: every request after `token revoke` is 401;
    `requests show` of a served X-Request-Id prints one entry naming it; of an unknown id,
    `{"entries": []}` and exit 1."""
    token_id, token = issue(work, env, "acme")
    gateway = Gateway(work, env | {"FXEV_RATE_LIMIT_PER_MIN": "1000"}, workers=2)
    try:
        served = gateway.latest(token)
        assert served.status_code == 200, served.text
        revoked = fxev(work, env, "token", "revoke", token_id)
        assert revoked.code == 0, revoked
        assert revoked.last["id"] == token_id
        after = [gateway.latest(token).status_code for _ in range(6)]  # both workers
        assert after == [401] * 6, after
    finally:
        gateway.stop()
    request_id = served.headers["X-Request-Id"]
    shown = fxev(work, env, "requests", "show", request_id)
    assert shown.code == 0, shown
    assert set(shown.last) == {"entries"}
    (entry,) = shown.last["entries"]
    assert entry["x_request_id"] == request_id and entry["status"] == 200
    none = fxev(work, env, "requests", "show", "00000000-0000-4000-8000-000000000000")
    assert none.code == 1 and none.last == {"entries": []}, none
    assert len(none.stderr.splitlines()) == 1 and "Traceback" not in none.stderr


# == The newcomer path: docs/operating/cli.md's "Trying a capture by hand", as written ========


def doc_block(page: Path, after_heading: str) -> str:
    text = page.read_text(encoding="utf-8")
    section = text[text.index(after_heading) :]
    found = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert found, after_heading
    return found.group(1)


def test_trying_a_capture_by_hand_works_as_the_cli_page_says(tmp_path: Path) -> None:
    """Newcomer path (README and docs/ alone must let a newcomer succeed; DECISIONS 3's capture
    outcomes): the block of docs/operating/cli.md#try-a-capture, run line by line as written
    (its port moved to a free one, its scratch folder made by this test, its background server
    started and stopped by this test), in a fresh home: each `# "outcome":...` comment is what
    the line prints, the failure's alert `contador` is 1 then 2, the next good capture resolves
    it, registry verify and build exit 0."""
    block = doc_block(ROOT / "docs" / "operating" / "cli.md", "## Trying a capture by hand")
    port = str(free_port())
    src = tmp_path / "src"
    lines = [
        line.replace("8765", port).replace("$TRY", str(tmp_path))
        for line in block.splitlines()
        if line.strip() and not line.startswith(("TRY=", "rm -rf"))
    ]
    server_lines = [line for line in lines if "http.server" in line]
    assert len(server_lines) == 1, lines
    env = clean_env(FXEV_HOME=str(tmp_path / "var"), FXEV_SITE=str(tmp_path / "site_out"))
    server = None
    outputs: list[tuple[str, subprocess.CompletedProcess[str]]] = []
    try:
        for line in lines:
            if line in server_lines:
                src.mkdir(exist_ok=True)
                server = subprocess.Popen(
                    [sys.executable, "-m", "http.server", port, "--bind", "127.0.0.1"],
                    cwd=src, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
                deadline = time.monotonic() + 10
                while True:
                    with (
                        contextlib.suppress(OSError),
                        socket.create_connection(("127.0.0.1", int(port)), timeout=1),
                    ):
                        break
                    assert time.monotonic() < deadline, "the doc's http.server never answered"
                    time.sleep(0.1)
                continue
            if line.startswith("export "):
                for assignment in line.removeprefix("export ").partition("#")[0].split():
                    name, _, value = assignment.partition("=")
                    if name not in ("FXEV_HOME", "FXEV_SITE"):  # the scratch home: this test's
                        env[name] = value
                continue
            command = line.replace(".venv/bin/fxev", str(FXEV))
            done = subprocess.run(
                ["bash", "-c", command], cwd=tmp_path, env=env,
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            outputs.append((line, done))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
    captures = [(line, done) for line, done in outputs if "fxev capture" in line]
    for line, done in outputs:
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
    results: list[dict[str, Any]] = [json.loads(d.stdout.splitlines()[-1]) for _, d in captures]
    for (line, _), result in zip(captures, results, strict=True):
        assert set(result) == CAPTURE_KEYS
        said = re.search(r'"outcome":"(\w+)"', line)
        if said:
            assert result["outcome"] == said.group(1), (line, result)
    failures = [r for (line, _), r in zip(captures, results, strict=True) if "missing" in line]
    assert [f["alerta"]["contador"] for f in failures] == [1, 2], failures
    after = results[results.index(failures[-1]) + 1]
    assert after["alerta"] is not None and after["alerta"]["id"] == failures[-1]["alerta"]["id"]
    assert after["alerta"]["estado"] == "resuelta", after


def test_ctrl_c_right_after_the_gateway_answers_stops_fxev_serve(
    work: Path, env: dict[str, str], seeded: int
) -> None:
    """Newcomer path, docs/getting-started.md (what `make run` does): "serves the gateway on
    127.0.0.1:8000 (Ctrl-C stops it)". A Ctrl-C (SIGINT) sent as soon as the gateway first
    answers must stop `fxev serve` and its workers within 15 s. (Formerly the main process logged
    "Received signal SIGINT. Shutting down.", its worker completes, and the main process then
    spins at ~50% CPU forever; a signal sent a few seconds later does stop it.)"""
    port = free_port()
    proc = subprocess.Popen(
        [str(FXEV), "serve", "--port", str(port), "--workers", "1"],
        cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                live = requests.get(f"http://127.0.0.1:{port}/v1/health/live", timeout=3)
                if live.status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "never answered"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pytest.fail("fxev serve still running 15 s after Ctrl-C")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the group of the process this test started
            proc.wait(timeout=10)
