"""``fxev verify``: a consumer's end-to-end check of values against their evidence, over HTTP.

For one observation: fetch its detail and its evidence, then check (``verifier.checks``)
the bytes' SHA-256 against ``X-Sha256``, the ETag and the recording event; the evidence headers
against the observation; the bytes re-parsed with the observation's parser against its values;
and its supersession chain (each link fetched). For a saved ``/v1/rates`` (or
``/v1/rates/latest``) response: the same for every item, plus the item against its observation
as of the response's revision.

Offline, ``--proof FILE`` checks a ``tlog-proof`` with only the log's key
(``verifier.proofcheck``).

Verdict: any ``fail`` exits 1; ``notice`` (a later correction) keeps 0; not being able to ask
(network, 401, 404, a bad saved file) is ``VerifyError``/``ClientError``, exit 2, reported by
``fxev``'s one handler (``builder.core.errors``).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import tempfile
import uuid
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson

from builder.core.console import emit
from builder.core.errors import RemoteError, UsageError
from builder.tlog import note
from verifier.checks import (
    Check,
    Checked,
    chain_checks,
    chain_ids,
    evidence_checks,
    item_checks,
    value_checks,
)
from verifier.client import ApiClient, ClientError
from verifier.logcheck import LogOptions, LogView, keep_checkpoint, log_checks
from verifier.proofcheck import ProofVerdict, check_proof, record_observation

Out = Callable[[str], None]


class VerifyUsageError(UsageError):
    """``fxev verify`` asked wrongly: an id and ``--response`` together, or no token (exit 2)."""

    exit_code = 2


class VerifyError(UsageError):
    """The check could not start: a malformed id, an unreadable saved response (exit 2)."""

    exit_code = 2
    command = "verify"


@dataclasses.dataclass(frozen=True, slots=True)
class SavedResponse:
    items: tuple[Mapping[str, Any], ...]
    dataset_revision: int


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict(Checked):
    """The verdict on observations asked of the API."""

    @property
    def checked(self) -> int:
        """How many observations were checked."""
        return len({check.observacion_id for check in self.checks})


def canonical_uuid(text: str) -> str:
    """``text`` as a lower-case hyphenated UUID, or ``VerifyError``."""
    try:
        value = uuid.UUID(text)
    except ValueError:
        raise VerifyError(f"{text!r} is not an observation id (a UUID)") from None
    if len(text) != 36:
        raise VerifyError(f"{text!r} is not an observation id (a 36-character UUID)")
    return str(value)


def parse_saved_response(data: bytes) -> SavedResponse:
    """The items of a saved ``/v1/rates`` body (or the one item of ``/v1/rates/latest``)."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise VerifyError(f"the saved response is not JSON: {error}") from None
    revision = body.get("dataset_revision") if isinstance(body, dict) else None
    if type(revision) is not int or revision < 1:  # a bool is no revision
        raise VerifyError("the saved response has no dataset_revision: not an fxev rates body")
    if isinstance(body.get("items"), list):
        items = tuple(body["items"])
    elif "observacion_id" in body:
        items = (body,)
    else:
        raise VerifyError("the saved response has neither items nor observacion_id")
    for position, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("observacion_id"), str):
            raise VerifyError(f"item {position} of the saved response has no observacion_id")
    return SavedResponse(items, body["dataset_revision"])


def log_options(vkey: str | None, state: str | None) -> LogOptions | None:
    """What ``--vkey`` (or ``FXEV_LOG_VKEY``) and ``--state`` ask; None: no log check."""
    if vkey is None:
        if state is not None:
            raise VerifyUsageError("verify --state needs the log's key: --vkey or FXEV_LOG_VKEY")
        return None
    try:
        key = note.parse_verifier_key(vkey)
    except note.NoteError as error:
        raise VerifyUsageError(f"the log's verifier key cannot be used: {error}") from None
    return LogOptions(key, None if state is None else usable_state(Path(state)))


def usable_state(path: Path) -> Path:
    """``--state``, refused before any check (exit 2) where it cannot be a file this run reads
    and then writes: a folder, a file it may not read, a path under a plain file."""
    if path.is_dir():
        raise VerifyUsageError(f"--state {path} is a folder, not a file")
    if path.exists():
        try:
            with path.open("rb"):
                pass
        except OSError as error:
            raise VerifyUsageError(f"--state {path} cannot be read: {error.strerror}") from None
        return path
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise VerifyUsageError(f"--state {path} cannot be made: {folder} is not a folder")
    try:  # the folder takes a new file (or folder) as the state will be saved: try it now
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".fxev-state-probe-"):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        raise VerifyUsageError(f"--state {path} cannot be made in {folder}: {reason}") from None
    return path


def read_saved_response(path: Path) -> SavedResponse:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise VerifyError(f"cannot read {path}: {error.strerror}") from None
    return parse_saved_response(data)


class MalformedAnswer(VerifyError, RemoteError):
    """An API answer lacks a field the spec gives it: nothing can be concluded (exit 2)."""


def verify_observation(
    client: ApiClient,
    obs_id: str,
    out: Out,
    log: LogOptions | None = None,
    view: LogView | None = None,
) -> list[Check]:
    """Every check of one observation; each printed through ``out`` as it is made. With
    ``log``, also against the transparency log (``verifier.logcheck``), through the run's
    ``view`` of it."""
    try:
        return _verify_observation(client, obs_id, out, log, view)
    except (KeyError, TypeError, AttributeError, ValueError, OverflowError) as error:
        raise MalformedAnswer(
            f"observation {obs_id}: the API's answer is not shaped as the spec says ({error!r})"
        ) from None


def _verify_observation(
    client: ApiClient, obs_id: str, out: Out, log: LogOptions | None, view: LogView | None
) -> list[Check]:
    detail = client.observation(canonical_uuid(obs_id))
    assert detail is not None
    observation = detail["observacion"]
    out(
        f"observacion {observation['id']} ({observation['fecha_serie']} {observation['serie']}, "
        f"{observation['fuente']}, revision {observation['revision_creada']})"
    )
    evidence = client.evidence(observation["evidencia_id"])
    checks, event = evidence_checks(detail, evidence.body, evidence.headers)
    checks += value_checks(detail, evidence.body, event)
    members = {
        member_id: client.observation(member_id, missing_ok=True)
        for member_id in chain_ids(detail)
        if member_id != observation["id"]
    }
    checks += chain_checks(detail, members)
    if log is not None:
        sha256 = hashlib.sha256(evidence.body).hexdigest()
        checks += log_checks(client, detail, sha256, log, view)
    for check in checks:
        out(check.line)
    return checks


def verify_saved_response(
    client: ApiClient,
    saved: SavedResponse,
    out: Out,
    log: LogOptions | None = None,
    view: LogView | None = None,
) -> list[Check]:
    """Every item of a saved response: its observation's checks, then the item's. An API
    behind the response's revision cannot tell what was valid at it: nothing is concluded
    (``ClientError``, exit 2), as for a 404 below."""
    served = served_revision(client)
    if served is not None and served < saved.dataset_revision:
        raise ClientError(
            f"the API is at revision {served}, behind the response's {saved.dataset_revision}:"
            " its items cannot be checked against it (run again later)"
        )
    checks: list[Check] = []
    for item in saved.items:
        obs_id = canonical_uuid(item["observacion_id"])
        if client.observation(obs_id, missing_ok=True) is None:
            # The registry is append-only: an item naming an observation it never held was not
            # served by it. A mismatch (exit 1), unlike an id asked for alone (exit 2), once the
            # API is known to have the response's revision (checked above): an API without a
            # log cannot tell.
            if served is None:
                raise ClientError(
                    f"observation {obs_id}: 404 NOT_FOUND from an API at revision {served},"
                    f" behind the response's {saved.dataset_revision}"
                )
            unknown = Check("fail", "item", "no such observation in the registry (404)", obs_id)
            out(f"observacion {obs_id}")
            out(unknown.line)
            checks.append(unknown)
            continue
        checks += verify_observation(client, obs_id, out, log, view)
        detail = client.observation(obs_id)
        assert detail is not None
        try:
            item_result = item_checks(item, detail, saved.dataset_revision)
        except (KeyError, TypeError, AttributeError, ValueError, OverflowError) as error:
            raise MalformedAnswer(
                f"item {item['observacion_id']}: not shaped as the spec says ({error!r})"
            ) from None
        for check in item_result:
            out(check.line)
            checks.append(check)
    return checks


def served_revision(client: ApiClient) -> int | None:
    """The revision the API publishes now: its log checkpoint's tree size (None: no log). Read
    unverified: it only tells whether the API is behind a response, which proves nothing."""
    text = (client.log("checkpoint") or b"").decode("utf-8", "replace").partition("\n\n")[0]
    try:
        return note.parse_checkpoint(text + "\n").size
    except note.NoteError:
        return None


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise VerifyError(f"cannot read the {what} {path}: {error.strerror}") from None


def run_proof_verify(
    proof: str, vkey: str | None, record: str | None = None, rows: str | None = None
) -> ProofVerdict:
    """``fxev verify --proof FILE``: a ``tlog-proof`` checked offline (``verifier.proofcheck``),
    with ``--record`` a saved ``/v1/observations/{id}`` body against its leaf; lines printed."""
    if vkey is None:
        raise VerifyUsageError("verify --proof needs the log's key: --vkey or FXEV_LOG_VKEY")
    options = log_options(vkey, None)
    assert options is not None
    observation = None
    if record is not None:
        try:
            observation = record_observation(orjson.loads(_read(record, "record")))
        except (orjson.JSONDecodeError, ValueError) as error:
            raise VerifyError(f"the record {record} cannot be used: {error}") from None
    rows_list = None if rows is None else _read(rows, "rows list")
    verdict = check_proof(_read(proof, "proof"), options.key, observation, rows_list)
    for check in verdict.checks:
        print(check.line, flush=True)
    return verdict


def run_verify(
    url: str | None,
    token: str | None,
    observacion_id: str | None,
    response: str | None,
    log: LogOptions | None,
) -> Verdict:
    """``fxev verify``: one observation, or every item of a saved response; lines printed."""
    if observacion_id is not None and response is not None:
        raise VerifyUsageError("verify takes an OBSERVACION_ID or --response FILE, not both")
    if observacion_id is None and response is None:
        raise VerifyUsageError("verify needs an OBSERVACION_ID or --response FILE: neither given")
    if not url:
        raise VerifyUsageError("verify OBSERVACION_ID and --response need the API's --url")
    if not token:
        raise VerifyUsageError("verify needs the bearer token in FXEV_TOKEN")

    def out(line: str) -> None:
        print(line, flush=True)

    with closing(ApiClient(url, token)) as client:
        view = None if log is None else LogView(client, log.key)
        if response is not None:
            saved = read_saved_response(Path(response))
            checks = verify_saved_response(client, saved, out, log, view)
        else:
            checks = verify_observation(client, observacion_id or "", out, log, view)
        if log is not None and view is not None:
            keep_checkpoint(view, log, checks)
    verdict = Verdict(tuple(checks))
    out(f"checked: {verdict.checked} observation(s)")
    return verdict


def run_verify_command(
    args: argparse.Namespace, token: str | None, vkey: str | None
) -> Verdict | ProofVerdict:
    """``fxev verify``'s forms: ``--proof FILE`` offline, else over HTTP (``run_verify``)."""
    if args.proof is not None:
        online = (args.observacion_id, args.response, args.url, args.state)
        if any(value is not None for value in online):
            raise VerifyUsageError("verify --proof is offline: no id, --response, --url or --state")
        return run_proof_verify(args.proof, vkey, args.record, args.rows)
    if args.record is not None or args.rows is not None:
        raise VerifyUsageError("verify --record and --rows go with --proof FILE")
    log = log_options(vkey, args.state)
    return run_verify(args.url, token, args.observacion_id, args.response, log)


def verify(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Exit 0 verified (notices allowed), 1 a mismatch, 2 could not ask (network, 401, 404) or
    a usage error: an empty ``--vkey`` is a key that cannot be used, not a key left out."""
    token = environ.get("FXEV_TOKEN") or None
    vkey = (environ.get("FXEV_LOG_VKEY", "").strip() or None) if args.vkey is None else args.vkey
    verdict = run_verify_command(args, token, vkey)
    emit(verdict.to_json())
    return verdict.exit_code
