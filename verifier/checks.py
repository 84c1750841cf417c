"""The checks of ``fxev verify``, as pure functions over what the API answered.

Each function takes decoded API bodies (dicts with the spec's field names), evidence bytes and
headers, and returns ``Check`` values; none touches the network. A check is ``ok``, ``fail``
(a value, hash or chain mismatch: the command exits 1) or ``notice`` (worth knowing, not a
mismatch: a later correction).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from builder.core.canonical import header_text
from builder.sources.reparse import (
    ReparseInput,
    ReparseMismatch,
    ReparseRefused,
    reparse,
)

Body = Mapping[str, Any]
RECORDING_EVENTS = ("capturada", "importada")
COMPARED_FIELDS = ("fecha_serie", "compra", "venta", "compra_cruda", "venta_cruda", "fragmento")
LABELS = {"ok": "ok", "fail": "FAIL", "notice": "note"}
ITEM_FIELDS = ("fecha_serie", "compra", "venta", "fuente", "capturado_en")


@dataclasses.dataclass(frozen=True, slots=True)
class Check:
    """One finding. Its message is kept to one line whoever made it: a CR or LF in it (a value
    the service sent, an error's text) is escaped, so a report is a line per finding."""

    status: str  # ok | fail | notice
    check: str  # sha256 | value | parser | chain | item | event | header | log | proof
    message: str
    observacion_id: str

    def __post_init__(self) -> None:
        one_line = self.message.replace("\r", "\\r").replace("\n", "\\n")
        object.__setattr__(self, "message", one_line)

    @property
    def line(self) -> str:
        return f"{LABELS[self.status]:<5}{self.check} {self.message}"

    def finding(self) -> dict[str, str]:
        return {
            "level": self.status,
            "check": self.check,
            "observacion_id": self.observacion_id,
            "message": self.message,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Checked:
    """The checks of one verify run, and its verdict: any ``fail`` exits 1, a ``notice`` keeps 0.
    Its last line is ``{"ok", "findings"}`` and nothing else (DECISIONS 3, every verify command);
    what else a form has to say goes in its plain lines."""

    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return not any(check.status == "fail" for check in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def findings(self) -> list[dict[str, str]]:
        return [check.finding() for check in self.checks if check.status != "ok"]

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "findings": self.findings()}


class Collector:
    """Collects the checks of one observation in the order they ran: every form of
    ``fxev verify`` (the API's answers, the log, an offline proof) reports through one."""

    def __init__(self, observacion_id: str) -> None:
        self.observacion_id = observacion_id
        self.items: list[Check] = []

    def add(self, status: str, check: str, message: str) -> None:
        self.items.append(Check(status, check, message, self.observacion_id))

    def ok(self, check: str, message: str) -> None:
        self.add("ok", check, message)

    def fail(self, check: str, message: str) -> None:
        self.add("fail", check, message)

    def notice(self, check: str, message: str) -> None:
        self.add("notice", check, message)

    def equal(self, check: str, what: str, actual: Any, expected: Any, against: str) -> bool:
        subject = f"{what} " if what else ""
        if actual == expected:
            self.add("ok", check, f"{subject}matches {against}")
            return True
        self.add("fail", check, f"{subject}{_show(actual)} != {against} {_show(expected)}")
        return False


def _show(value: Any) -> str:
    return "null" if value is None else str(value)


def recording_event(observation: Body, events: Sequence[Body]) -> Body | None:
    """The ``capturada`` or ``importada`` event that recorded the observation's evidence."""
    for event in events:
        if (
            event["tipo"] in RECORDING_EVENTS
            and event["evidencia_id"] == observation["evidencia_id"]
        ):
            return event
    return None


# -- evidence: the bytes' hash against everything that states it ----------------------------


def evidence_checks(
    detail: Body, body: bytes, headers: Mapping[str, str]
) -> tuple[list[Check], Body | None]:
    """The bytes' SHA-256 against ``X-Sha256``, the ETag and the recording event; the
    evidence headers against the observation. Returns the checks and the recording event."""
    observation = detail["observacion"]
    checks = Collector(observation["id"])
    sha256 = hashlib.sha256(body).hexdigest()
    checks.equal("sha256", "", sha256, headers.get("X-Sha256"), "X-Sha256")
    checks.equal("sha256", "", f'"{sha256}"', headers.get("ETag"), "ETag")
    checks.equal(
        "header",
        "X-Identidad-Consulta",
        headers.get("X-Identidad-Consulta"),
        header_text(observation["identidad_consulta"]),
        "identidad_consulta",
    )
    checks.equal(
        "header",
        "X-Capturado-En",
        headers.get("X-Capturado-En"),
        observation["capturado_en"],
        "capturado_en",
    )
    event = recording_event(observation, detail["eventos"])
    if event is None:
        checks.fail(
            "event",
            f"no capturada or importada event records evidence {observation['evidencia_id']}",
        )
        return checks.items, None
    recorded = event["detalle"].get("sha256")
    checks.equal("sha256", "", sha256, recorded, f"{event['tipo']} event")
    if event["tipo"] == "capturada":
        for side in ("compra", "venta"):
            checks.equal(
                "event",
                side,
                observation[side],
                event["detalle"].get(side),
                "capturada event",
            )
    return checks.items, event


# -- values: the bytes re-parsed against the observation ------------------------------------


def value_checks(detail: Body, body: bytes, event: Body | None) -> list[Check]:
    """Re-parse the bytes with the observation's parser; compare every parsed field."""
    observation = detail["observacion"]
    checks = Collector(observation["id"])
    linea = None
    if event is not None and event["tipo"] == "importada":
        linea = event["detalle"].get("linea")
    given = ReparseInput(
        version_parser=observation["version_parser"],
        identidad_consulta=observation["identidad_consulta"],
        capturado_en=observation["capturado_en"],
        fecha_serie=observation["fecha_serie"],
        linea=linea if isinstance(linea, int) else None,
    )
    try:
        parsed = reparse(body, given)
    except ReparseRefused as error:
        checks.fail("parser", f"{error}: values not re-parsed")
        return checks.items
    except ReparseMismatch as error:
        checks.fail("value", str(error))
        return checks.items
    checks.ok("parser", f"re-parsed with {observation['version_parser']}")
    for field in COMPARED_FIELDS:
        expected = getattr(parsed, field)
        actual = observation[field]
        if actual == expected:
            checks.ok("value", f"{field} {actual} matches re-parsed")
        else:
            checks.fail("value", f"{field} {actual} != re-parsed {expected}")
    return checks.items


# -- the supersession chain -----------------------------------------------------------------


def chain_ids(detail: Body) -> list[str]:
    """Ids of the whole chain, oldest first: ancestros, the observation, sucesoras."""
    cadena = detail["cadena"]
    return [
        *(o["id"] for o in cadena["ancestros"]),
        detail["observacion"]["id"],
        *(o["id"] for o in cadena["sucesoras"]),
    ]


def chain_checks(detail: Body, members: Mapping[str, Body | None]) -> list[Check]:
    """The chain of ``detail`` is consistent: every link resolves to the same record, every
    member sees the same chain, links point back (``supersedida``/``correccion``), one date,
    no cycle. ``members`` maps each chain id to its own detail, or None when it is unknown."""
    observation = detail["observacion"]
    checks = Collector(observation["id"])
    ids = chain_ids(detail)
    if len(set(ids)) != len(ids):
        checks.fail("chain", f"an observation appears twice in the chain {ids}: a cycle")
        return checks.items
    cadena = detail["cadena"]
    records = [*cadena["ancestros"], observation, *cadena["sucesoras"]]
    failures = 0

    def detail_of(member_id: str) -> Body | None:
        return detail if member_id == observation["id"] else members.get(member_id)

    for index, (member_id, record) in enumerate(zip(ids, records, strict=True)):
        member = detail_of(member_id)
        if member is None:
            checks.fail("chain", f"link {member_id} does not resolve")
            failures += 1
            continue
        if member["observacion"] != record:
            checks.fail("chain", f"link {member_id} differs from its record in cadena")
            failures += 1
        if chain_ids(member) != ids:
            checks.fail(
                "chain",
                f"{member_id} sees the chain {chain_ids(member)}, not {ids}",
            )
            failures += 1
        key = (record["moneda"], record["serie"], record["fecha_serie"])
        if key != (observation["moneda"], observation["serie"], observation["fecha_serie"]):
            checks.fail("chain", f"link {member_id} is about {key}, another date or series")
            failures += 1
        if index + 1 < len(ids):
            failures += _link_checks(checks, member, ids[index + 1], detail_of(ids[index + 1]))
    superseded = bool(detail["cadena"]["sucesoras"])
    if detail.get("superseded") != superseded:
        checks.fail(
            "chain", f"superseded is {detail.get('superseded')}, sucesoras say {superseded}"
        )
        failures += 1
    if failures == 0:
        checks.ok("chain", f"{len(ids)} link(s) consistent, each pointing back, no cycle")
    if superseded:
        successor = detail["cadena"]["sucesoras"][0]
        checks.notice(
            "chain",
            f"superseded_por {successor['id']}: superseded at revision "
            f"{successor['revision_creada']} (compra {successor['compra']}, "
            f"venta {successor['venta']})",
        )
    return checks.items


def _link_checks(checks: Collector, older: Body, newer_id: str, newer: Body | None) -> int:
    """``older`` says ``supersedida`` by ``newer_id``; a ``correccion`` on ``newer`` names it."""
    failures = 0
    older_id = older["observacion"]["id"]
    pointers = [
        e["detalle"].get("superseded_por") for e in older["eventos"] if e["tipo"] == "supersedida"
    ]
    if pointers != [newer_id]:
        checks.fail("chain", f"{older_id} supersedida events point to {pointers}, not [{newer_id}]")
        failures += 1
    if newer is not None:
        named = [
            e["detalle"].get("supersede") for e in newer["eventos"] if e["tipo"] == "correccion"
        ]
        if named and named != [older_id]:
            checks.fail("chain", f"{newer_id} correccion names {named}, not {older_id}")
            failures += 1
        if newer["observacion"]["revision_creada"] <= older["observacion"]["revision_creada"]:
            checks.fail("chain", f"{newer_id} is not later than the {older_id} it supersedes")
            failures += 1
    return failures


# -- a saved rate item against the observation ----------------------------------------------


def item_checks(item: Body, detail: Body, dataset_revision: int) -> list[Check]:
    """A rate item served at ``dataset_revision`` agrees with its observation's detail now."""
    observation = detail["observacion"]
    checks = Collector(observation["id"])
    failures = 0
    for field in ITEM_FIELDS:
        if item.get(field) != observation[field]:
            checks.fail(
                "item",
                f"{field} {_show(item.get(field))} != observation {observation[field]}",
            )
            failures += 1
    events = [e for e in detail["eventos"] if e["revision"] <= dataset_revision]
    marcas = list(dict.fromkeys(e["tipo"] for e in events))
    if item.get("marcas") != marcas:
        checks.fail(
            "item",
            f"marcas {item.get('marcas')} != events up to revision {dataset_revision} {marcas}",
        )
        failures += 1
    cotejos = [
        {k: v for k, v in c.items() if k != "id"}
        for c in detail["cotejos"]
        if c["revision"] <= dataset_revision
    ]
    if item.get("cotejos") != cotejos:
        checks.fail(
            "item",
            f"cotejos differ from the observation's up to revision {dataset_revision}",
        )
        failures += 1
    if item.get("superseded") is not False:
        checks.fail(
            "item",
            f"superseded is {item.get('superseded')}; a served item is never superseded",
        )
        failures += 1
    if observation["revision_creada"] > dataset_revision:
        checks.fail(
            "item",
            f"observation created at revision {observation['revision_creada']}, after the "
            f"response's revision {dataset_revision}",
        )
        failures += 1
    sucesoras = detail["cadena"]["sucesoras"]
    successor = sucesoras[0] if sucesoras else None
    if successor is not None and successor["revision_creada"] <= dataset_revision:
        checks.fail(
            "item",
            f"superseded by {successor['id']} at revision {successor['revision_creada']}, yet "
            f"served as valid at revision {dataset_revision}",
        )
        failures += 1
    claimed = item.get("superseded_por")
    if claimed is not None and claimed != (successor["id"] if successor else None):
        checks.fail(
            "item",
            f"superseded_por {claimed} != the observation's successor "
            f"{_show(successor['id'] if successor else None)}",
        )
        failures += 1
    if failures == 0:
        checks.ok("item", f"fields match the observation as of revision {dataset_revision}")
    return checks.items
