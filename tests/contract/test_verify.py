"""``fxev verify`` against a real gateway: the demo passes; a tampered tree fails with exit 1.

The tampering is what someone with write access to the published tree could do without the
gateway noticing: change a value in an observation's detail, or swap an evidence blob for
altered bytes and fix its metadata to match, then recompute every hash the tree records (the
revision record holding the change, every later record linking to it, the pointer) and restart
the gateway. A naive change that the gateway's own hash checks catch makes it answer 500: no
verdict, exit 2.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from builder.publish.revlog import RevisionLogWriter
from builder.tree.layout import POINTER
from builder.tree.reader import TreeReader
from builder.tree.revision import RevisionRecord
from tests.contract.conftest import Gateway, run_fxev

LATEST = "/v1/rates/latest?currency=USD&series=publicado"
SEPT = "/v1/rates?currency=USD&series=publicado&from=2026-09-01&to=2026-09-21"


def verify(gateway: Gateway, *args: str, token: str | None = None) -> tuple[int, list[str], str]:
    """(exit code, stdout lines, stderr) of ``fxev verify ARGS --url <gateway>``."""
    env = gateway.env | {"FXEV_TOKEN": token or gateway.token}
    done = run_fxev(env, "verify", *args, "--url", gateway.base_url)
    return done.returncode, done.stdout.splitlines(), done.stderr


def verdict(lines: list[str]) -> dict[str, Any]:
    return orjson.loads(lines[-1])


def latest_detail(gateway: Gateway) -> dict[str, Any]:
    latest = gateway.get(LATEST).json()
    return gateway.get(f"/v1/observations/{latest['observacion_id']}").json()


def forge_record(
    site: Path, revision: int, edit: Callable[[RevisionRecord], RevisionRecord]
) -> None:
    """Rewrite record ``revision`` with ``edit``, then re-link every later record and the pointer
    to the new hashes, as a forger who recomputes every hash would."""
    tree = TreeReader(site)
    published = tree.published_revision()
    assert published is not None
    records = [RevisionRecord.decode(tree.record_bytes(n)) for n in range(1, published + 1)]
    shutil.rmtree(site / "revisions")
    log = RevisionLogWriter(site / "revisions")
    hashes: dict[int, str] = {}
    for record in records:
        if record.revision == revision:
            record = edit(record)
        record = dataclasses.replace(record, links={t: hashes[t] for t in record.links})
        data = record.encode()
        hashes[record.revision] = hashlib.sha256(data).hexdigest()
        log.append(record.revision, data)
    pointer = orjson.loads((site / POINTER).read_bytes())
    (site / POINTER).write_bytes(orjson.dumps(pointer | {"root_sha256": hashes[published]}))


# -- a good tree ------------------------------------------------------------------------------


def test_latest_observation_passes_every_check(gateway: Gateway) -> None:
    detail = latest_detail(gateway)
    code, lines, _ = verify(gateway, detail["observacion"]["id"])
    assert code == 0, lines
    assert verdict(lines) == {"ok": True, "findings": []}
    assert lines[-2] == "checked: 1 observation(s)"
    assert "ok   sha256 matches X-Sha256" in lines
    assert "ok   sha256 matches capturada event" in lines
    assert "ok   parser re-parsed with taxauth_txt-1.0" in lines
    assert "ok   value venta 3.364 matches re-parsed" in lines
    assert "ok   chain 3 link(s) consistent, each pointing back, no cycle" in lines


def test_every_item_of_a_saved_response_passes(gateway: Gateway, tmp_path: Path) -> None:
    saved = tmp_path / "rates.json"
    body = gateway.get(SEPT).content
    saved.write_bytes(body)
    code, lines, _ = verify(gateway, "--response", str(saved))
    assert code == 0, [line for line in lines if not line.startswith("ok")]
    total = len(orjson.loads(body)["items"])
    assert verdict(lines) == {"ok": True, "findings": []}
    assert lines[-2] == f"checked: {total} observation(s)"
    assert sum(line.startswith("ok   item fields match") for line in lines) == total
    # Imports are checked against their importada event's hash and line.
    assert "ok   sha256 matches importada event" in lines
    assert "ok   parser re-parsed with importado_csv-1.0" in lines


def test_a_central_bank_close_is_re_parsed_from_its_json(gateway: Gateway) -> None:
    # A publication checked against a close names the close's observation.
    item = next(i for i in gateway.get(SEPT).json()["items"] if i["cotejos"])
    close_id = item["cotejos"][0]["contraparte_observacion_id"]
    code, lines, _ = verify(gateway, close_id)
    assert code == 0, lines
    assert "ok   parser re-parsed with centralbank_json-1.0" in lines


def test_a_superseded_observation_is_a_notice_not_a_failure(gateway: Gateway) -> None:
    imported = latest_detail(gateway)["cadena"]["ancestros"][0]
    code, lines, _ = verify(gateway, imported["id"])
    assert code == 0, lines
    [finding] = verdict(lines)["findings"]
    assert (finding["level"], finding["check"]) == ("notice", "chain")
    assert finding["message"].startswith("superseded_por ")
    assert any(line.startswith("note chain superseded_por") for line in lines)


# -- cannot ask: exit 2, distinct from a mismatch ---------------------------------------------


def test_unknown_observation_is_exit_2(gateway: Gateway) -> None:
    code, lines, err = verify(gateway, "00000000-0000-4000-8000-000000000000")
    assert (code, lines) == (2, [])
    assert "404 NOT_FOUND" in err


def test_a_refused_token_is_exit_2(gateway: Gateway) -> None:
    code, _, err = verify(gateway, latest_detail(gateway)["observacion"]["id"], token="fxev_bad")
    assert code == 2
    assert "401 UNAUTHORIZED" in err


def test_a_malformed_id_is_exit_2_before_any_request(gateway: Gateway) -> None:
    code, lines, err = verify(gateway, "not-a-uuid")
    assert (code, lines) == (2, [])
    assert "not an observation id" in err


def test_an_unreachable_api_is_exit_2(gateway: Gateway) -> None:
    env = gateway.env | {"FXEV_TOKEN": gateway.token}
    observation = latest_detail(gateway)["observacion"]["id"]
    done = run_fxev(env, "verify", observation, "--url", "http://127.0.0.1:9")
    assert done.returncode == 2
    assert "127.0.0.1:9" in done.stderr


def test_a_blob_the_gateway_refuses_is_exit_2(corrupt_gateway: Gateway) -> None:
    code, _, err = verify(corrupt_gateway, latest_detail(corrupt_gateway)["observacion"]["id"])
    assert code == 2
    assert "500 INTERNAL" in err


# -- a tampered tree: exit 1 -------------------------------------------------------------------


def test_a_value_changed_in_the_site_fails(private_gateway: Gateway) -> None:
    detail = latest_detail(private_gateway)
    obs_id = detail["observacion"]["id"]
    site = private_gateway.site
    written, digest = TreeReader(site).detail_versions(obs_id)[-1]
    original = TreeReader(site).detail(obs_id, written)
    assert original is not None
    altered = original.replace(b'"venta":"3.364"', b'"venta":"3.365"', 1)
    forge_record(
        site,
        written,
        lambda record: dataclasses.replace(record, details=record.details | {obs_id: altered}),
    )
    marker = site / "observations" / obs_id / f"{written:010d}-{digest}"
    marker.rename(marker.with_name(f"{written:010d}-{hashlib.sha256(altered).hexdigest()}"))
    private_gateway.stop()
    private_gateway.start()
    assert latest_detail(private_gateway)["observacion"]["venta"] == "3.365"

    code, lines, _ = verify(private_gateway, obs_id)
    assert code == 1, lines
    assert "FAIL value venta 3.365 != re-parsed 3.364" in lines
    assert "FAIL event venta 3.365 != capturada event 3.364" in lines
    result = verdict(lines)
    assert result["ok"] is False
    assert {f["check"] for f in result["findings"]} == {"value", "event"}


def test_evidence_bytes_swapped_in_the_site_fail(private_gateway: Gateway) -> None:
    detail = latest_detail(private_gateway)
    obs_id, ev_id = detail["observacion"]["id"], detail["observacion"]["evidencia_id"]
    site = private_gateway.site
    written = int(os.readlink(site / "evidence" / f"{ev_id}.json"))
    meta = TreeReader(site).evidence_meta(ev_id, written)
    assert meta is not None
    objects = site / "objects" / "sha256"
    original = (objects / meta.sha256[:2] / meta.sha256).read_bytes()
    altered = original.replace(b"3.364", b"3.365")
    assert altered != original
    sha = hashlib.sha256(altered).hexdigest()
    (objects / sha[:2]).mkdir(exist_ok=True)
    (objects / sha[:2] / sha).write_bytes(altered)
    forge_record(
        site,
        written,
        lambda record: dataclasses.replace(
            record, evidence=record.evidence | {ev_id: dataclasses.replace(meta, sha256=sha)}
        ),
    )
    private_gateway.stop()
    private_gateway.start()

    code, lines, _ = verify(private_gateway, obs_id)
    assert code == 1, lines
    assert "ok   sha256 matches X-Sha256" in lines  # the forger kept the headers consistent
    assert f"FAIL sha256 {sha} != capturada event {meta.sha256}" in lines
    assert "FAIL value venta 3.364 != re-parsed 3.365" in lines


def test_a_saved_response_edited_after_the_fact_fails(gateway: Gateway, tmp_path: Path) -> None:
    body = gateway.get(SEPT).json()
    item = body["items"][-1]
    served = item["venta"]
    item["venta"] = "3.999"
    saved = tmp_path / "edited.json"
    saved.write_bytes(orjson.dumps(body))
    code, lines, _ = verify(gateway, "--response", str(saved))
    assert code == 1
    assert f"FAIL item venta 3.999 != observation {served}" in lines
    [finding] = verdict(lines)["findings"]
    assert (finding["observacion_id"], finding["check"]) == (item["observacion_id"], "item")


def test_a_saved_item_naming_an_observation_never_served_fails(
    gateway: Gateway, tmp_path: Path
) -> None:
    """DECISIONS 3: `fxev verify --response` exits 1 "on a value, hash or chain mismatch". The
    registry is append-only, so an item whose observacion_id the API does not know was never
    served by it: a failed check of that item (exit 1), while the other items are still
    checked. (Formerly "404 NOT_FOUND", exit 2, as if the API could not be asked.)"""
    body = gateway.get(SEPT).json()
    forged = "00000000-0000-4000-8000-000000000000"
    body["items"][0]["observacion_id"] = forged
    saved = tmp_path / "forged.json"
    saved.write_bytes(orjson.dumps(body))
    code, lines, _ = verify(gateway, "--response", str(saved))
    assert code == 1
    assert "FAIL item no such observation in the registry (404)" in lines
    findings = verdict(lines)["findings"]
    assert [(f["observacion_id"], f["check"]) for f in findings] == [(forged, "item")]
    assert any(line.startswith("ok   item") for line in lines)  # the others checked
    # An API behind the response's revision (a gateway whose mirror lags) cannot tell: exit 2.
    body["dataset_revision"] += 1
    saved.write_bytes(orjson.dumps(body))
    code, lines, err = verify(gateway, "--response", str(saved))
    assert code == 2 and "behind the response's" in err, (lines, err)


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"not json", "not JSON"), (b'{"items": []}', "dataset_revision")],
)
def test_an_unreadable_saved_response_is_exit_2(
    gateway: Gateway, tmp_path: Path, content: bytes, message: str
) -> None:
    saved = tmp_path / "saved.json"
    saved.write_bytes(content)
    code, lines, err = verify(gateway, "--response", str(saved))
    assert (code, lines) == (2, [])
    assert message in err
