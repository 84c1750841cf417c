"""Revisions, corrections, the tree's integrity and the explorer in detail, from outside.

Everything here runs the real ``fxev`` console script in temporary homes (``FXEV_HOME`` and
``FXEV_SITE`` under pytest's tmp_path), a real local HTTP source, and a real gateway process
(``fxev serve``, 2 workers, a free port on 127.0.0.1, stopped by its PID) spoken to over HTTP.

The module's world is one home that lives through captures, an identical re-capture, two
corrections of one date (a chain of three), an annotation and an import carrying hostile
operator text, a recorded failure, and a direct capture that supersedes the import, built after
(almost) every step while one gateway keeps serving. What the gateway answered for each revision
while it was current is kept, and compared with what it answers for that revision at the end,
after a ``--rebuild`` too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import html
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.builder.localserver import LocalServer
from tests.builder.treefiles import tree_files
from tests.contract.conftest import Gateway as ContractGateway
from tests.contract.conftest import running
from tests.support.cli import Ran

FXEV = Path(sys.executable).with_name("fxev")
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120
WORKERS = 2
GATEWAY_NOW = "2026-09-18T20:00:00-05:00"
RATES = "/v1/rates?currency=USD&series=publicado&from=2026-01-01&to=2026-12-31"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
SUPERSEDED_POR = re.compile(rb'"superseded_por":(null|"' + UUID.encode() + rb'")')

HOSTILE_TEXT = '<script>alert("x")</script> O\'Brien & "comillas" ñandú ✓ </code></pre>'
HOSTILE_ACTOR = "<b onmouseover='x()'>Ana Ñ</b> & \"co\""
HOSTILE_JUSTIFICATION = "<img src=x onerror=alert(1)> según 'SBS' & \"BCRP\" — ¿ok?"
HOSTILE_CSV_NAME = 'lote <i>"1"<i> & ñ.csv'


# -- running fxev ---------------------------------------------------------------------------------


def home_env(
    base: Path, now: str = GATEWAY_NOW, url: str = "http://127.0.0.1:9/x"
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env.update(
        {
            "FXEV_HOME": str(base / "home"),
            "FXEV_SITE": str(base / "site"),
            "FXEV_NOW": now,
            "FXEV_TAXAUTH_URL": url,
            "FXEV_RATE_LIMIT_PER_MIN": "1000000",
            "FXEV_RATE_LIMIT_PER_DAY": "10000000",
            "FXEV_MIN_FREE_BYTES": "1",
        }
    )
    return env


def fxev(env: dict[str, str], *args: str, check: bool = True, **extra: str) -> Ran:
    proc = subprocess.run(
        [str(FXEV), *args],
        env={**env, **extra},
        cwd=ROOT,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    ran = Ran(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    if check:
        assert ran.code == 0, (args, ran.code, ran.stdout, ran.stderr)
    return ran


def issue_token(env: dict[str, str], name: str = "reader") -> str:
    return fxev(env, "token", "issue", name).stdout.splitlines()[-1].strip()


class Gateway(ContractGateway):
    """The contract suite's gateway (2 workers, a free port, stopped by its PID), also asked
    for the explorer's pages."""

    def page(self, path: str) -> requests.Response:
        return self.get(path, headers={"Accept": "text/html"})


# -- parsing the explorer's pages -----------------------------------------------------------------


def strip_tags(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def table(page: str, table_id: str) -> str:
    found = re.search(rf'<table id="{table_id}">(.*?)</table>', page, re.DOTALL)
    assert found, f"no table {table_id}"
    return found[1]


def body_rows(fragment: str) -> list[list[str]]:
    tbody = re.search(r"<tbody>(.*?)</tbody>", fragment, re.DOTALL)
    assert tbody
    rows = re.findall(r"<tr>(.*?)</tr>", tbody[1], re.DOTALL)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL) for row in rows]


def observation_page(page: str) -> dict[str, Any]:
    fields = dict(
        re.findall(r"<tr><th>(\w+)</th><td[^>]*>(.*?)</td></tr>", table(page, "observacion"))
    )
    fields = {k: strip_tags(v) for k, v in fields.items()}
    fragmento = re.search(r'<pre id="fragmento">(.*?)</pre>', page, re.DOTALL)
    sha = re.search(r'<code id="sha256">([0-9a-f]{64})</code>', page)
    hoja = re.search(r'<strong id="hoja">(\d+)</strong>', page)
    evidence = re.search(r'<a id="evidencia" href="/evidencia/([^"]+)"', page)
    chains: dict[str, list[str]] = {}
    for name in ("ancestros", "sucesoras"):
        section = re.search(rf"<h3>{name} .*?</h3>(.*?)(?=<h3>|<h2>)", page, re.DOTALL)
        assert section, name
        chains[name] = re.findall(rf'<a href="/observacion/({UUID})">', section[1])
    events = [
        {
            "tipo": strip_tags(cells[0]),
            "ts": strip_tags(cells[1]),
            "revision": int(strip_tags(cells[2])),
            "evidencia_id": (re.findall(rf"/evidencia/({UUID})", cells[3]) or [None])[0],
            "detalle": json.loads(strip_tags(cells[4])),
        }
        for cells in body_rows(table(page, "eventos"))
    ]
    reemplazada = re.search(rf'<p class="error" id="reemplazada">.*?/observacion/({UUID})', page)
    return {
        "fields": fields,
        "fragmento": html.unescape(fragmento[1]) if fragmento else None,
        "sha256": sha[1] if sha else None,
        "hoja": int(hoja[1]) if hoja else None,
        "evidencia_id": evidence[1] if evidence else None,
        "chains": chains,
        "events": events,
        "superseded_by": reemplazada[1] if reemplazada else None,
        "vigente": 'id="vigente"' in page,
    }


def year_rows(page: str) -> list[dict[str, str]]:
    rows = []
    for cells in body_rows(table(page, "valores")):
        rows.append(
            {
                "fecha_serie": strip_tags(cells[0]),
                "compra": strip_tags(cells[1]),
                "venta": strip_tags(cells[2]),
                "fuente": strip_tags(cells[3]),
                "marcas": strip_tags(cells[4]),
                "observacion_id": strip_tags(cells[6]),
            }
        )
    return rows


# -- the world ------------------------------------------------------------------------------------


def day(d: int, hour: int, minute: int = 0) -> str:
    return f"2026-09-{d:02d}T{hour:02d}:{minute:02d}:00-05:00"


@dataclasses.dataclass
class Snapshot:
    revision: int
    asof: bytes  # /v1/rates as of this revision, while it was the published one
    asof_etag: str
    current: dict[str, Any]  # /v1/rates without as_of_revision, request_id removed
    latest: dict[str, Any]
    details: dict[str, dict[str, Any]]  # /v1/observations/{id}, request_id removed
    ts_commit: str


@dataclasses.dataclass
class World:
    base: Path
    env: dict[str, str]
    token: str
    gateway: Gateway
    snapshots: dict[int, Snapshot]
    head: int
    ids: set[str]
    ids_by_step: dict[str, str]
    explorer_mismatches: list[str]
    explorer_checked: int


def strip_request_id(body: bytes) -> dict[str, Any]:
    value = json.loads(body)
    value.pop("request_id", None)
    return value


def explorer_mismatches(gateway: Gateway, ids: set[str], revision: int) -> list[str]:
    """Everything on the explorer that disagrees with the API of the same published revision."""
    problems: list[str] = []
    rates = gateway.get(RATES)
    assert rates.status_code == 200, rates.text
    items = rates.json()["items"]
    assert rates.json()["dataset_revision"] == revision
    year = gateway.page("/serie/publicado/2026")
    assert year.status_code == 200, year.text
    rows = year_rows(year.text)
    api_rows = [
        {
            "fecha_serie": i["fecha_serie"],
            "compra": i["compra"],
            "venta": i["venta"],
            "fuente": i["fuente"],
            "marcas": ", ".join(i["marcas"]),
            "observacion_id": i["observacion_id"],
        }
        for i in items
    ]
    if rows != api_rows:
        problems.append(f"r{revision} year page rows {rows} != api {api_rows}")
    for obs_id in sorted(ids):
        api = gateway.get(f"/v1/observations/{obs_id}")
        page = gateway.page(f"/observacion/{obs_id}")
        if api.status_code != 200:
            if page.status_code != 404:
                problems.append(
                    f"r{revision} {obs_id}: api {api.status_code}, page {page.status_code}"
                )
            continue
        if page.status_code != 200:
            problems.append(f"r{revision} {obs_id}: page {page.status_code}")
            continue
        detail = api.json()
        obs = detail["observacion"]
        seen = observation_page(page.text)
        for field in (
            "id", "moneda", "serie", "fecha_serie", "compra", "venta", "compra_cruda",
            "venta_cruda", "fuente", "identidad_consulta", "version_parser", "capturado_en",
            "ejecucion_id",
        ):  # fmt: skip
            if seen["fields"].get(field) != str(obs[field]):
                problems.append(
                    f"r{revision} {obs_id} {field}: page {seen['fields'].get(field)!r} "
                    f"api {obs[field]!r}"
                )
        if seen["fields"].get("revision_creada") != str(obs["revision_creada"]):
            problems.append(f"r{revision} {obs_id} revision_creada differs")
        if seen["hoja"] != obs["revision_creada"] - 1:
            problems.append(
                f"r{revision} {obs_id} hoja {seen['hoja']} != {obs['revision_creada'] - 1}"
            )
        if seen["fragmento"] != obs["fragmento"]:
            problems.append(
                f"r{revision} {obs_id} fragmento {seen['fragmento']!r} != {obs['fragmento']!r}"
            )
        if seen["evidencia_id"] != obs["evidencia_id"]:
            problems.append(f"r{revision} {obs_id} evidence link {seen['evidencia_id']}")
        evidence = gateway.get(f"/v1/evidence/{obs['evidencia_id']}")
        if evidence.status_code != 200 or seen["sha256"] != evidence.headers.get("X-Sha256"):
            served = evidence.headers.get("X-Sha256")
            problems.append(f"r{revision} {obs_id} sha256 page {seen['sha256']} api {served}")
        if hashlib.sha256(evidence.content).hexdigest() != seen["sha256"]:
            problems.append(f"r{revision} {obs_id} evidence bytes do not hash to the page's sha256")
        chains = {k: [m["id"] for m in detail["cadena"][k]] for k in ("ancestros", "sucesoras")}
        if seen["chains"] != chains:
            problems.append(f"r{revision} {obs_id} chain page {seen['chains']} api {chains}")
        if detail["superseded"]:
            expected = detail["cadena"]["sucesoras"][0]["id"]
            if seen["superseded_by"] != expected or seen["vigente"]:
                problems.append(
                    f"r{revision} {obs_id} superseded note names {seen['superseded_by']}, "
                    f"api direct successor {expected}"
                )
        elif seen["superseded_by"] is not None or not seen["vigente"]:
            problems.append(f"r{revision} {obs_id} page says superseded, api says not")
        api_events = [
            {k: e[k] for k in ("tipo", "ts", "revision", "evidencia_id", "detalle")}
            for e in detail["eventos"]
        ]
        if seen["events"] != api_events:
            problems.append(f"r{revision} {obs_id} eventos page {seen['events']} api {api_events}")
    return problems


def snapshot(gateway: Gateway, revision: int, ids: set[str]) -> Snapshot:
    asof = gateway.get(f"{RATES}&as_of_revision={revision}")
    assert asof.status_code == 200, asof.text
    current = gateway.get(RATES)
    assert current.status_code == 200
    latest = gateway.get("/v1/rates/latest?currency=USD&series=publicado")
    details = {}
    for obs_id in ids:
        got = gateway.get(f"/v1/observations/{obs_id}")
        if got.status_code == 200:
            details[obs_id] = strip_request_id(got.content)
    # ts_commit of the published revision, as the API says it
    page = gateway.get("/v1/revisions?at=2999-01-01T00:00:00Z")
    assert page.status_code == 200, page.text
    assert page.json()["revision"] == revision
    return Snapshot(
        revision=revision,
        asof=asof.content,
        asof_etag=asof.headers["ETag"],
        current=strip_request_id(current.content),
        latest=strip_request_id(latest.content),
        details=details,
        ts_commit=page.json()["ts_commit"],
    )


def collect_ids(gateway: Gateway, ids: set[str]) -> None:
    """Every observation id the API shows now, and the members of their chains."""
    for item in gateway.get(RATES).json()["items"]:
        ids.add(item["observacion_id"])
    for obs_id in list(ids):
        got = gateway.get(f"/v1/observations/{obs_id}")
        if got.status_code == 200:
            for key in ("ancestros", "sucesoras"):
                ids.update(m["id"] for m in got.json()["cadena"][key])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("tree-details")
    csv = base / HOSTILE_CSV_NAME
    csv.write_text("fecha_serie,compra,venta\n2026-09-16,3.3305,3.3384\n", encoding="utf-8")
    snapshots: dict[int, Snapshot] = {}
    ids: set[str] = set()
    by_step: dict[str, str] = {}
    mismatches: list[str] = []
    checked = 0
    with LocalServer() as source:

        def capture(now: str, body: bytes, status: int = 200) -> dict[str, Any]:
            source.set(body=body, status=status)
            return fxev(home_env(base, now, source.url), "capture").last

        env = home_env(base, GATEWAY_NOW, source.url)
        r = capture(day(17, 13), b"17/09/2026|3.340|3.348|\r\n")
        assert r["outcome"] == "nueva" and r["revision"] == 1
        by_step["first_17"] = r["observacion_id"]
        ids.add(r["observacion_id"])
        assert fxev(env, "build").last["published_revision"] == 1
        token = issue_token(env)
        with running(base, env, token, Gateway) as gateway:

            def observe(revision: int) -> None:
                nonlocal checked
                snapshots[revision] = snapshot(gateway, revision, ids)
                mismatches.extend(explorer_mismatches(gateway, ids, revision))
                checked += 1

            def publish(expected: int) -> None:
                assert fxev(env, "build").last["published_revision"] == expected
                collect_ids(gateway, ids)
                observe(expected)

            def captured(
                when: str,
                body: bytes,
                outcome: str,
                revision: int,
                step: str = "",
                status: int = 200,
            ) -> None:
                """A capture of ``body`` recorded as ``outcome`` in ``revision``, then published."""
                r = capture(when, body, status)
                assert (r["outcome"], r["revision"]) == (outcome, revision)
                if step:
                    by_step[step] = r["observacion_id"]
                publish(revision)

            observe(1)
            captured(day(17, 14), b"17/09/2026|3.340|3.348|\r\n", "identica", 2)
            captured(day(17, 15), b"17/09/2026|3.342|3.350|\r\n", "correccion", 3, "second_17")
            captured(day(18, 13), b"18/09/2026|3.350|3.358|\r\n", "nueva", 4, "first_18")
            a = fxev(
                home_env(base, day(18, 14), source.url),
                "annotate", "--fecha", "2026-09-17", "--texto", HOSTILE_TEXT,
                "--actor", HOSTILE_ACTOR, "--justification", HOSTILE_JUSTIFICATION,
                "--serie", "publicado",
            ).last  # fmt: skip
            assert a["revision"] == 5, a
            publish(5)
            i = fxev(
                home_env(base, day(18, 15), source.url),
                "import", str(csv), "--actor", HOSTILE_ACTOR,
                "--justification", HOSTILE_JUSTIFICATION,
            ).last  # fmt: skip
            assert i["revision"] == 6, i
            by_step["import_16"] = i["observaciones"][0]["observacion_id"]
            ids.add(by_step["import_16"])
            # revisions 6 and 7 published together: 6 was never current
            captured(day(18, 16), b"<html>down</html>", "fallo", 7, status=503)
            captured(day(18, 17), b"18/09/2026|3.351|3.359|\r\n", "correccion", 8, "second_18")
            captured(day(18, 18), b"17/09/2026|3.343|3.351|\r\n", "correccion", 9, "third_17")
            captured(day(18, 19), b"16/09/2026|3.330|3.338|\r\n", "nueva", 10, "direct_16")
            yield World(
                base=base,
                env=env,
                token=token,
                gateway=gateway,
                snapshots=snapshots,
                head=10,
                ids=ids,
                ids_by_step=by_step,
                explorer_mismatches=mismatches,
                explorer_checked=checked,
            )


def final_successors(world: World) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for obs_id in world.ids:
        detail = world.gateway.get(f"/v1/observations/{obs_id}").json()
        sucesoras = detail["cadena"]["sucesoras"]
        found[obs_id] = sucesoras[0]["id"] if sucesoras else None
    return found


def splice_superseded_por(body: bytes, successors: dict[str, str | None]) -> bytes:
    """``body`` with every item's ``superseded_por`` set to ``successors`` of its id."""
    value = json.loads(body)
    for item in value["items"]:
        item["superseded_por"] = successors[item["observacion_id"]]
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def canonical(body: bytes) -> bytes:
    return json.dumps(json.loads(body), ensure_ascii=False, separators=(",", ":")).encode()


# -- section 4: any past revision always answers the same ----------------------------------------


def test_every_past_revision_answers_the_same_after_later_builds_up_to_superseded_por(
    world: World,
) -> None:
    """DECISIONS 5: "the body is a function of the canonical request, its revision and the
    published `superseded_por` map, so identical requests get identical bytes, which change only
    when `superseded_por` changes"; SPEC: "With `as_of_revision` a client can query the dataset as
    it was at any past revision and always get the same answer"."""
    successors = final_successors(world)
    for revision, snap in sorted(world.snapshots.items()):
        now = world.gateway.get(f"{RATES}&as_of_revision={revision}")
        assert now.status_code == 200
        assert now.headers["ETag"] == f'"{hashlib.sha256(now.content).hexdigest()}"'
        # The same bytes as then, once superseded_por is brought to today's map.
        then_spliced = splice_superseded_por(snap.asof, successors)
        assert canonical(now.content) == then_spliced, revision
        # And byte for byte: only the superseded_por values may differ.
        assert SUPERSEDED_POR.sub(b"X", now.content) == SUPERSEDED_POR.sub(b"X", snap.asof)
        if SUPERSEDED_POR.findall(now.content) == SUPERSEDED_POR.findall(snap.asof):
            assert now.content == snap.asof
            assert now.headers["ETag"] == snap.asof_etag


def test_as_of_answers_equal_what_was_served_while_each_revision_was_current(world: World) -> None:
    """SPEC: "Revision N is the state of the registry after commit number N"; DECISIONS 4: "The
    API answers at the latest *published* revision": as of N later = what was served at N
    (but `superseded_por`, "as of the latest revision", and the fresh `request_id`)."""
    successors = final_successors(world)
    for revision, snap in sorted(world.snapshots.items()):
        now = json.loads(world.gateway.get(f"{RATES}&as_of_revision={revision}").content)
        now.pop("request_id")
        then = dict(snap.current)
        for item in then["items"]:
            item["superseded_por"] = successors[item["observacion_id"]]
        assert now == then, revision
        assert now["dataset_revision"] == revision


def test_as_of_revision_6_which_was_never_current_is_the_state_after_the_import(
    world: World,
) -> None:
    """SPEC: "Revision N is the state of the registry after commit number N" (revision 6, the
    import, was published together with revision 7, so no reader saw it current)."""
    body = world.gateway.get(f"{RATES}&as_of_revision=6").json()
    seven = json.loads(world.snapshots[7].asof)
    assert [i["observacion_id"] for i in body["items"]] == [
        i["observacion_id"] for i in seven["items"]
    ]
    assert body["dataset_revision"] == 6
    assert any(i["fuente"] == "importado" for i in body["items"])


def test_revisions_at_each_commit_instant_resolves_to_that_revision(world: World) -> None:
    """SPEC /v1/revisions: "Returns the last revision whose commit is at or before `at`"; every
    ts_commit is the FXEV_NOW of its command (DECISIONS 2, 4)."""
    for revision, snap in sorted(world.snapshots.items()):
        got = world.gateway.get(f"/v1/revisions?at={snap.ts_commit}")
        assert got.status_code == 200
        assert (got.json()["revision"], got.json()["ts_commit"]) == (revision, snap.ts_commit)
        assert got.json()["dataset_revision"] == world.head


def test_as_of_answers_are_identical_across_both_workers_and_repeated_requests(
    world: World,
) -> None:
    """DECISIONS 5: "identical requests get identical bytes"; request_id is a v5 UUID of the
    canonical request, and `X-Request-Id` is fresh per HTTP request."""
    for revision in range(1, world.head + 1):
        bodies = set()
        xids = set()
        for _ in range(6):
            got = world.gateway.get(f"{RATES}&as_of_revision={revision}")
            bodies.add(got.content)
            xids.add(got.headers["X-Request-Id"])
        assert len(bodies) == 1, revision
        assert len(xids) == 6


def test_details_of_past_observations_only_grow_by_later_events(world: World) -> None:
    """DECISIONS 6: "Corrections never overwrite: they supersede"; SPEC: "Observations are
    immutable. No field is ever corrected": an observation's record as served at any later
    revision is the record served when it was first published, and its events only grow."""
    final = {
        obs_id: strip_request_id(world.gateway.get(f"/v1/observations/{obs_id}").content)
        for obs_id in world.ids
    }
    for revision, snap in sorted(world.snapshots.items()):
        for obs_id, then in snap.details.items():
            now = final[obs_id]
            assert now["observacion"] == then["observacion"], (revision, obs_id)
            assert now["eventos"][: len(then["eventos"])] == then["eventos"], (revision, obs_id)
            assert now["cadena"]["ancestros"] == then["cadena"]["ancestros"], (revision, obs_id)


# -- section 6: corrections, chains, superseded_por, revision_creada ------------------------------


def test_a_chain_of_three_corrections_links_each_to_its_direct_successor(world: World) -> None:
    """DECISIONS 6: "`superseded_por` is the direct successor. `cadena.ancestros` ... oldest first,
    `sucesoras` nearest first"; events `capturada` then `correccion` (`detalle.supersede`) on the
    new one, `supersedida` (`detalle.superseded_por`) on the old one, in one revision."""
    first, second, third = (world.ids_by_step[k] for k in ("first_17", "second_17", "third_17"))
    details = {k: world.gateway.get(f"/v1/observations/{k}").json() for k in (first, second, third)}
    assert [m["id"] for m in details[first]["cadena"]["sucesoras"]] == [second, third]
    assert [m["id"] for m in details[third]["cadena"]["ancestros"]] == [first, second]
    assert [m["id"] for m in details[second]["cadena"]["ancestros"]] == [first]
    assert [m["id"] for m in details[second]["cadena"]["sucesoras"]] == [third]
    assert details[first]["superseded"] and details[second]["superseded"]
    assert not details[third]["superseded"]
    assert [d["observacion"]["revision_creada"] for d in details.values()] == [1, 3, 9]
    # events
    sup_first = [e for e in details[first]["eventos"] if e["tipo"] == "supersedida"]
    assert [(e["revision"], e["detalle"]["superseded_por"]) for e in sup_first] == [(3, second)]
    sup_second = [e for e in details[second]["eventos"] if e["tipo"] == "supersedida"]
    assert [(e["revision"], e["detalle"]["superseded_por"]) for e in sup_second] == [(9, third)]
    tipos_third = [e["tipo"] for e in details[third]["eventos"]]
    assert tipos_third[:2] == ["capturada", "correccion"]
    corr = [e for e in details[third]["eventos"] if e["tipo"] == "correccion"]
    assert corr[0]["detalle"]["supersede"] == second
    # The full records in the chain are the records served for those observations.
    assert details[third]["cadena"]["ancestros"][0] == details[first]["observacion"]
    # as of revision 3..8, 17/09 is `second` with superseded_por = third (today's map)
    for revision in (1, 2):
        items = world.gateway.get(f"{RATES}&as_of_revision={revision}").json()["items"]
        seventeen = [i for i in items if i["fecha_serie"] == "2026-09-17"]
        assert [(i["observacion_id"], i["superseded_por"]) for i in seventeen] == [(first, second)]
    for revision in range(3, 9):
        items = world.gateway.get(f"{RATES}&as_of_revision={revision}").json()["items"]
        seventeen = [i for i in items if i["fecha_serie"] == "2026-09-17"]
        assert [(i["observacion_id"], i["superseded_por"]) for i in seventeen] == [(second, third)]


def test_marcas_as_of_a_revision_list_only_the_events_up_to_it(world: World) -> None:
    """DECISIONS 6: "`marcas`: the distinct event types of the observation as of the queried
    revision, in order of first occurrence"."""
    first = world.ids_by_step["first_17"]
    expected = {1: ["capturada"], 2: ["capturada", "recaptura_identica"]}
    for revision, marcas in expected.items():
        items = world.gateway.get(f"{RATES}&as_of_revision={revision}").json()["items"]
        got = [i["marcas"] for i in items if i["observacion_id"] == first]
        assert got == [marcas], revision


def test_a_direct_capture_supersedes_the_import_and_keeps_it_in_its_ancestors(world: World) -> None:
    """DECISIONS 6: "A later direct observation supersedes it: outcome `nueva`, only `capturada`
    on the new observation, `supersedida` on the import, and the import in the new observation's
    `cadena.ancestros`"; the import's values are rounded half-up to 3 places."""
    imported, direct = world.ids_by_step["import_16"], world.ids_by_step["direct_16"]
    d_new = world.gateway.get(f"/v1/observations/{direct}").json()
    d_imp = world.gateway.get(f"/v1/observations/{imported}").json()
    assert [e["tipo"] for e in d_new["eventos"]] == ["capturada"]
    assert [m["id"] for m in d_new["cadena"]["ancestros"]] == [imported]
    assert d_imp["superseded"] is True
    assert [e["tipo"] for e in d_imp["eventos"]] == ["importada", "supersedida"]
    assert (d_imp["observacion"]["compra"], d_imp["observacion"]["venta"]) == ("3.331", "3.338")
    assert d_imp["observacion"]["identidad_consulta"] == f"IMPORT {HOSTILE_CSV_NAME}"
    detalle = d_imp["eventos"][0]["detalle"]
    assert (detalle["actor"], detalle["justificacion"]) == (HOSTILE_ACTOR, HOSTILE_JUSTIFICATION)


# -- the explorer agrees with the API ------------------------------------------------------------


def test_explorer_pages_agree_with_the_api_at_every_published_revision(world: World) -> None:
    """docs/explorer.md: "a reader sees revision N-1 everywhere or N everywhere, never the API at
    one and the explorer at the other"; the observation page shows "values, raw values,
    `fragmento`, its evidence with its SHA-256 ..., its leaf ... (revision_creada - 1), ... the
    chain (`ancestros`, `sucesoras`), `eventos`"; a year page "every value with its `marcas`"."""
    assert world.explorer_checked == len(world.snapshots)
    assert world.explorer_mismatches == []


def test_explorer_agrees_with_the_api_after_everything_and_after_a_rebuild(world: World) -> None:
    """docs/explorer.md "How it is built": "The pages are a function of the published revision
    alone (an incremental render equals a full one)"; docs/operating/tree.md: "A rebuild of the
    same registry gives the same bytes as the tree it replaces"."""
    assert explorer_mismatches(world.gateway, world.ids, world.head) == []


def test_operator_text_is_escaped_in_every_explorer_page_and_exact_in_the_api(world: World) -> None:
    """docs/explorer.md: "with jinja2 (autoescape, `StrictUndefined`)"; DECISIONS 11: the annotation
    record carries `texto`, `actor`, `justificacion` as entered."""
    annotations = world.gateway.get("/v1/annotations").json()["items"]
    assert [(a["texto"], a["actor"], a["justificacion"]) for a in annotations] == [
        (HOSTILE_TEXT, HOSTILE_ACTOR, HOSTILE_JUSTIFICATION)
    ]
    paths = ["/", "/serie/publicado", "/serie/publicado/2026", "/cobertura/publicado/2026",
             "/revisiones"] + [f"/observacion/{i}" for i in sorted(world.ids)]  # fmt: skip
    for path in paths:
        page = world.gateway.page(path)
        assert page.status_code == 200, path
        text = page.text
        for raw in ("<script", "<img", "<b onmouseover", '<i>"1"<i>'):
            assert raw not in text, (path, raw)
    imported = world.ids_by_step["import_16"]
    seen = observation_page(world.gateway.page(f"/observacion/{imported}").text)
    assert seen["fields"]["identidad_consulta"] == f"IMPORT {HOSTILE_CSV_NAME}"


# -- --rebuild and idempotence ---------------------------------------------------------------------


def test_build_with_nothing_new_and_rebuild_keep_every_answer_byte_identical(
    world: World,
) -> None:
    """DECISIONS 3: `fxev build` "with nothing new, the same N, exit 0"; docs/operating/tree.md:
    "A rebuild of the same registry gives the same bytes as the tree it replaces", and a gateway
    "serves the old tree or the new one"."""
    site = Path(world.env["FXEV_SITE"])
    before_files = tree_files(site)
    before = {r: world.gateway.get(f"{RATES}&as_of_revision={r}") for r in range(1, world.head + 1)}
    again = fxev(world.env, "build")
    assert again.last["published_revision"] == world.head
    assert tree_files(site) == before_files
    rebuilt = fxev(world.env, "build", "--rebuild")
    assert rebuilt.last["published_revision"] == world.head
    after_files = tree_files(site)
    missing = sorted(set(before_files) - set(after_files))
    extra = sorted(set(after_files) - set(before_files))
    differing = sorted(k for k in set(before_files) & set(after_files)
                       if before_files[k] != after_files[k])  # fmt: skip
    for r, then in before.items():
        now = world.gateway.get(f"{RATES}&as_of_revision={r}")
        assert now.content == then.content
        assert now.headers["ETag"] == then.headers["ETag"]
        cached = world.gateway.get(
            f"{RATES}&as_of_revision={r}", headers={"If-None-Match": then.headers["ETag"]}
        )
        assert cached.status_code == 304
    assert explorer_mismatches(world.gateway, world.ids, world.head) == []

    # Last: the tree's own files (the API above already agrees), but for what records the
    # builds that made the tree (docs/operating/tree.md: a rebuild is one build): their
    # invalidations, their checkpoints and those checkpoints' partial tiles.
    def of_builds(name: str) -> bool:
        partial = name.startswith("log/tile/") and ".p/" in name
        return partial or name.startswith(("invalidations/", "log/checkpoints/"))

    missing = [name for name in missing if not of_builds(name)]
    assert (missing, extra, differing) == ([], [], [])


# -- fxev registry verify -----------------------------------------------------------------------


def copy_home(world: World, target: Path, site: bool = True) -> Path:
    shutil.copytree(world.base / "home", target / "home", ignore=shutil.ignore_patterns("ledger*"))
    if site:
        shutil.copytree(world.base / "site", target / "site", symlinks=True)
    return target


def evidence_blobs(home: Path) -> list[Path]:
    return sorted(p for p in (home / "evidence").rglob("*") if p.is_file())


def test_registry_verify_reports_every_bad_blob_and_only_the_first_of_two_chain_breaks(
    world: World, tmp_path: Path
) -> None:
    """DECISIONS 3: `fxev registry verify` "walks the revision hash chain and every evidence blob;
    reports every bad blob and the first chain break", exit 1 on any finding."""
    base = copy_home(world, tmp_path, site=False)
    env = home_env(base)
    ok = fxev(env, "registry", "verify")
    assert (ok.last["ok"], ok.last["findings"]) == (True, [])
    blobs = evidence_blobs(base / "home")
    assert len(blobs) >= 4
    csv_blob = next(p for p in blobs if p.read_bytes().startswith(b"fecha_serie,"))
    outage_blob = next(p for p in blobs if p.read_bytes() == b"<html>down</html>")
    for blob in (csv_blob, outage_blob):
        blob.chmod(0o644)
        data = bytearray(blob.read_bytes())
        data[-1] ^= 1
        blob.write_bytes(bytes(data))
    gone = next(p for p in blobs if p.read_bytes().startswith(b"18/09/2026|3.351"))
    gone.chmod(0o644)
    gone.unlink()
    with contextlib.closing(sqlite3.connect(base / "home" / "registry.sqlite")) as conn, conn:
        assert (
            conn.execute(
                "UPDATE observations SET venta = '3.999' WHERE revision_creada = 4"
            ).rowcount
            == 1
        )
        assert (
            conn.execute(
                "UPDATE observations SET compra = '3.111' WHERE revision_creada = 9"
            ).rowcount
            == 1
        )
    ran = fxev(env, "registry", "verify", check=False)
    assert ran.code == 1, ran
    report = ran.last
    assert report["ok"] is False
    chain = [f for f in report["findings"] if f.startswith("chain break")]
    blobs_found = [f for f in report["findings"] if not f.startswith("chain break")]
    assert len(chain) == 1 and chain[0].startswith("chain break: revision 4:"), report
    assert len(blobs_found) == 3, report
    for blob in (csv_blob, outage_blob, gone):
        assert any(blob.name in f for f in blobs_found), (blob.name, report)
    assert ran.stderr == "" or "Traceback" not in ran.stderr


# -- the gateway refuses a tampered tree -----------------------------------------------------------


def tamper_targets(site: Path, world: World) -> dict[str, Path]:
    """One file of each kind the gateway reads, picked from the final tree."""
    objects = sorted(p for p in (site / "objects").rglob("*") if p.is_file())
    found: dict[str, Path] = {}
    for path in objects:
        data = path.read_bytes()
        if data.startswith(b"17/09/2026|3.343"):
            found["evidence_bytes"] = path
        elif b'"huecos"' in data:
            found.setdefault("coverage_object", path)
            found[f"coverage_object_{path.name}"] = path
        elif b'"fecha_serie":"2026-09-17"' in data and b'"compra":"3.343"' in data:
            found.setdefault("month_chunk", path)  # revisions 9 and 10 each have one
            found[f"month_chunk_{path.name}"] = path
    page_map = json.loads(sorted((site / "explorer" / "maps").glob("*.json"))[-1].read_bytes())
    year_sha = page_map["pages"]["serie/publicado/2026.html"][1]
    found["explorer_page"] = site / "explorer" / "pages" / f"{year_sha}.html"
    return found


# Not here: the explorer's map and observation pages, and a detail's marker removed, which
# docs/operating/tree.md#integrity lists as what the checks do not cover.
TAMPER_KINDS = [
    "evidence_bytes", "coverage_object", "month_chunk", "explorer_page",
    "pointer_root", "published_record", "explorer_page_deleted",
]  # fmt: skip


def route_of(kind: str, world: World) -> tuple[str, bool]:
    """(the route that reads that file, whether it is an explorer page)."""
    third = world.ids_by_step["third_17"]
    if kind == "evidence_bytes":
        detail = world.gateway.get(f"/v1/observations/{third}").json()
        return f"/v1/evidence/{detail['observacion']['evidencia_id']}", False
    if kind == "coverage_object":
        return "/v1/coverage", False
    if kind == "month_chunk":
        return f"{RATES}&as_of_revision={world.head}", False
    if kind in ("explorer_page", "explorer_page_deleted"):
        return "/serie/publicado/2026", True
    return f"{RATES}&as_of_revision={world.head}", False


@pytest.mark.parametrize("kind", TAMPER_KINDS)
def test_a_tampered_tree_file_is_refused_with_500_internal_and_other_routes_keep_working(
    world: World, tmp_path: Path, kind: str
) -> None:
    """DECISIONS 5: "a tree whose bytes do not match their recorded hash is refused";
    docs/operating/tree.md "Integrity": "Every read is checked against a recorded SHA-256, and a
    tree that does not match is refused (`TreeCorruptError`; the gateway answers 500 `INTERNAL`
    rather than wrong data)"; DECISIONS 9: "An `INTERNAL` body carries no detail"."""
    base = copy_home(world, tmp_path)
    site = base / "site"
    path, explorer = route_of(kind, world)
    good = world.gateway.page(path) if explorer else world.gateway.get(path)
    assert good.status_code == 200
    targets = tamper_targets(site, world)
    if kind == "pointer_root":
        pointer = json.loads((site / "PUBLISHED").read_bytes())
        pointer["root_sha256"] = "0" * 64
        (site / "PUBLISHED").write_bytes(json.dumps(pointer).encode())
    elif kind == "published_record":
        packs = sorted((site / "revisions").glob("*.pack"))
        data = bytearray(packs[-1].read_bytes())
        at = data.rindex(b'"ts_commit":"') + len(b'"ts_commit":"') + 3
        data[at] = ord("9") if data[at] != ord("9") else ord("8")
        packs[-1].chmod(0o644)
        packs[-1].write_bytes(bytes(data))
    elif kind == "explorer_page_deleted":
        targets["explorer_page"].chmod(0o644)
        targets["explorer_page"].unlink()
    elif kind == "month_chunk":
        for name, target in targets.items():
            if name.startswith("month_chunk_"):
                target.chmod(0o644)
                target.write_bytes(target.read_bytes().replace(b"3.343", b"3.999"))
    elif kind == "coverage_object":
        for name, target in targets.items():
            if name.startswith("coverage_object_"):
                target.chmod(0o644)
                data = target.read_bytes()
                target.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:
        target = targets[kind]
        target.chmod(0o644)
        data = target.read_bytes()
        if kind in ("explorer_page", "month_chunk"):
            changed = data.replace(b"3.343", b"3.999")
            assert changed != data
        else:
            changed = data[:-1] + bytes([data[-1] ^ 1])
        target.write_bytes(changed)
    env = home_env(base)
    token = issue_token(env)
    with running(tmp_path, env, token, Gateway) as gateway:
        got = gateway.page(path) if explorer else gateway.get(path)
        assert b"3.999" not in got.content, (kind, got.status_code)
        assert got.status_code == 500, (kind, got.status_code, got.text[:300])
        if not explorer:
            body = got.json()
            assert body["code"] == "INTERNAL" and body["retryable"] is True
            assert set(body) == {"code", "message", "request_id", "retryable"}
            assert (
                "sha256" not in body["message"].lower() and "corrupt" not in body["message"].lower()
            )
        if kind not in ("pointer_root", "published_record"):
            live = gateway.get("/v1/health/live")
            assert live.status_code == 200
            other = "/v1/annotations" if kind != "coverage_object" else "/v1/alerts"
            assert gateway.get(other).status_code == 200, kind


# -- crash safety and concurrency of fxev build ---------------------------------------------------


_UNBUILT: dict[str, Path] = {}


def prepare_unbuilt_revisions(world: World, base: Path) -> dict[str, str]:
    """A copy of one copy of the world with two new revisions (a correction and a new date) not
    yet built: every caller gets the same registry (same ids) and the same published tree."""
    if "base" not in _UNBUILT:
        _UNBUILT["base"] = _make_unbuilt(world, world.base.parent / "unbuilt")
    shutil.copytree(_UNBUILT["base"] / "home", base / "home")
    shutil.copytree(_UNBUILT["base"] / "site", base / "site", symlinks=True)
    return home_env(base)


def _make_unbuilt(world: World, base: Path) -> Path:
    copy_home(world, base)
    with LocalServer() as source:
        for now, body in (
            (day(18, 20), b"18/09/2026|3.352|3.360|\r\n"),
            (day(19, 13), b"19/09/2026|3.355|3.363|\r\n"),
        ):
            source.set(body=body)
            fxev(home_env(base, now, source.url), "capture")
    return base


def test_build_killed_at_every_build_point_then_rerun_leaves_the_same_tree(
    world: World, tmp_path: Path
) -> None:
    """docs/operating/tree.md "Concurrency and crashes": "A build killed at any point leaves the
    previous revision published; the next `fxev build` ... completes the work, leaving the same
    bytes as a build that was never killed"."""
    reference_env = prepare_unbuilt_revisions(world, tmp_path / "ref")
    assert fxev(reference_env, "build").last["published_revision"] == world.head + 2
    reference = tree_files(tmp_path / "ref" / "site")
    for point in ("build_after_revision", "build_staged_write", "build_explorer_map",
                  "build_before_pointer"):  # fmt: skip
        base = tmp_path / point
        env = prepare_unbuilt_revisions(world, base)
        pointer = (base / "site" / "PUBLISHED").read_bytes()
        killed = fxev(env, "build", check=False, FXEV_FAULT_KILL_AT=point)
        assert killed.code == -signal.SIGKILL, (point, killed)
        assert (base / "site" / "PUBLISHED").read_bytes() == pointer, point
        done = fxev(env, "build")
        assert done.last["published_revision"] == world.head + 2
        got = tree_files(base / "site")
        # The log's checkpoint is signed afresh (Ed25519 is deterministic, so equal too).
        missing = sorted(set(reference) - set(got))
        extra = sorted(set(got) - set(reference))
        differ = sorted(k for k in set(got) & set(reference) if got[k] != reference[k])
        assert (missing, extra, differ) == ([], [], []), point


def test_build_killed_at_random_instants_then_rerun_serves_the_same_answers(
    world: World, tmp_path: Path
) -> None:
    """docs/operating/tree.md: "A build killed at any point leaves the previous revision
    published; ... leaving the same bytes as a build that was never killed"."""
    reference_env = prepare_unbuilt_revisions(world, tmp_path / "ref")
    fxev(reference_env, "build")
    reference = tree_files(tmp_path / "ref" / "site")
    for n, delay in enumerate((0.25, 0.45, 0.7, 0.95)):
        base = tmp_path / f"k{n}"
        env = prepare_unbuilt_revisions(world, base)
        proc = subprocess.Popen([str(FXEV), "build"], env=env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        pointer = json.loads((base / "site" / "PUBLISHED").read_bytes())
        assert pointer["revision"] in (world.head, world.head + 2)
        fxev(env, "build")
        got = tree_files(base / "site")
        differ = sorted(k for k in set(got) | set(reference) if got.get(k) != reference.get(k))
        assert differ == [], (delay, differ)


def test_two_builds_run_together_both_succeed_and_leave_one_tree(
    world: World, tmp_path: Path
) -> None:
    """docs/operating/tree.md: "A build holds an exclusive `flock` on `build.lock` from start to
    end: a second build waits, then finds the work done"; DECISIONS 3: last line
    `{"published_revision": N, ...}`."""
    reference_env = prepare_unbuilt_revisions(world, tmp_path / "ref")
    fxev(reference_env, "build")
    reference = tree_files(tmp_path / "ref" / "site")
    env = prepare_unbuilt_revisions(world, tmp_path / "both")
    results: list[Ran] = []

    def one() -> None:
        results.append(fxev(env, "build", check=False))

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=TIMEOUT)
    assert [r.code for r in results] == [0, 0], results
    assert [r.last["published_revision"] for r in results] == [world.head + 2] * 2
    got = tree_files(tmp_path / "both" / "site")
    differ = sorted(k for k in set(got) | set(reference) if got.get(k) != reference.get(k))
    assert differ == []


def test_a_gateway_serving_during_builds_never_goes_back_and_sees_api_and_explorer_together(
    world: World, tmp_path: Path
) -> None:
    """DECISIONS 4: "`dataset_revision` never goes backwards between two requests of a client";
    docs/explorer.md: "a reader sees revision N-1 everywhere or N everywhere"."""
    env = prepare_unbuilt_revisions(world, tmp_path / "live")
    token = issue_token(env)
    with running(tmp_path, env, token, Gateway) as gateway:
        seen: list[int] = []
        stop = threading.Event()
        errors: list[str] = []

        def poll() -> None:
            while not stop.is_set():
                got = gateway.get("/v1/rates/latest?currency=USD&series=publicado")
                if got.status_code != 200:
                    errors.append(f"{got.status_code} {got.text[:200]}")
                    continue
                seen.append(got.json()["dataset_revision"])
                page = gateway.page("/serie/publicado/2026")
                if page.status_code != 200:
                    errors.append(f"page {page.status_code}")

        poller = threading.Thread(target=poll)
        poller.start()
        try:
            fxev(env, "build")
        finally:
            time.sleep(0.5)
            stop.set()
            poller.join(timeout=30)
        assert errors == []
        assert seen == sorted(seen)
        assert seen[-1] == world.head + 2


# -- a tree belongs to one registry --------------------------------------------------------------


def other_registry(base: Path) -> dict[str, str]:
    """A new home of three revisions with other values: another registry."""
    with LocalServer() as source:
        for now, body in (
            (day(17, 13), b"17/09/2026|3.700|3.708|\r\n"),
            (day(17, 14), b"17/09/2026|3.701|3.709|\r\n"),
            (day(18, 13), b"18/09/2026|3.710|3.718|\r\n"),
        ):
            source.set(body=body)
            fxev(home_env(base, now, source.url), "capture")
    return home_env(base)


def test_another_registrys_build_is_refused_then_rebuild_is_served_without_stale_answers(
    world: World, tmp_path: Path
) -> None:
    """DECISIONS 14: "`fxev build` on a site of another registry refuses (one line naming both,
    exit 1) unless `--rebuild`, which renders a fresh tree and swaps it in atomically";
    docs/operating/tree.md: "a reader that sees the pointer name another registry forgets what it
    had read of the old tree"; DECISIONS 5: ETag = SHA-256 of the body."""
    base = copy_home(world, tmp_path / "a")
    env_a = home_env(base)
    token = issue_token(env_a)
    other = other_registry(tmp_path / "b")
    env_b = {**other, "FXEV_SITE": str(base / "site")}
    with running(tmp_path, env_a, token, Gateway) as gateway:
        asof3 = gateway.get(f"{RATES}&as_of_revision=3")
        page_a = gateway.page("/serie/publicado/2026")
        obs_a = world.ids_by_step["third_17"]
        assert gateway.get(f"/v1/observations/{obs_a}").status_code == 200
        pointer = (base / "site" / "PUBLISHED").read_bytes()
        refused = fxev(env_b, "build", check=False)
        assert refused.code == 1
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        ids = re.findall(r"sha256:[0-9a-f]{64}", refused.stderr)
        assert len(set(ids)) == 2, refused.stderr
        assert (base / "site" / "PUBLISHED").read_bytes() == pointer
        assert gateway.get(f"{RATES}&as_of_revision=3").content == asof3.content
        rebuilt = fxev(env_b, "build", "--rebuild")
        assert rebuilt.last["published_revision"] == 3
        now3 = gateway.get(f"{RATES}&as_of_revision=3")
        assert now3.status_code == 200
        assert [i["compra"] for i in now3.json()["items"]] == ["3.701", "3.710"]
        assert now3.headers["ETag"] == f'"{hashlib.sha256(now3.content).hexdigest()}"'
        then = {"If-None-Match": asof3.headers["ETag"]}
        stale = gateway.get(f"{RATES}&as_of_revision=3", headers=then)
        assert stale.status_code == 200
        assert gateway.get(f"/v1/observations/{obs_a}").status_code == 404
        assert gateway.get(f"{RATES}&as_of_revision=4").status_code == 400
        page_b = gateway.page("/serie/publicado/2026")
        assert page_b.status_code == 200 and page_b.text != page_a.text
        assert "3.701" in page_b.text and "3.343" not in page_b.text
        assert gateway.page(f"/observacion/{obs_a}").status_code == 404
        latest = gateway.get("/v1/rates/latest?currency=USD&series=publicado").json()
        assert (latest["compra"], latest["dataset_revision"]) == ("3.710", 3)
