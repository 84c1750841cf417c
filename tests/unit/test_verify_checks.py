"""The pure checks of ``fxev verify``: hashes, re-parsed values, the chain, a saved item."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import urllib.parse
from typing import Any

import pytest

from builder.sources.reparse import ReparseInput, ReparseMismatch, ReparseRefused, reparse
from verifier.checks import (
    Check,
    chain_checks,
    evidence_checks,
    header_text,
    item_checks,
    value_checks,
)
from verifier.command import Verdict, VerifyError, canonical_uuid, parse_saved_response

BODY = b"21/09/2026|3.356|3.364|\r\n"
SHA = hashlib.sha256(BODY).hexdigest()
CAPTURED = "2026-09-21T20:00:00.000000Z"
IDENTITY = "GET https://taxauth.test/a/txt/tipoCambio.txt"
CSV = b"fecha_serie,compra,venta\n2026-09-18,3.35,3.3625\n2026-09-19,3.354,3.362\n"


def record(obs_id: str, revision: int, compra: str = "3.356", venta: str = "3.364") -> dict:
    return {
        "id": obs_id,
        "moneda": "USD",
        "serie": "publicado",
        "fecha_serie": "2026-09-21",
        "compra": compra,
        "venta": venta,
        "compra_cruda": compra,
        "venta_cruda": venta,
        "fuente": "taxauth_txt",
        "identidad_consulta": IDENTITY,
        "fragmento": f"21/09/2026|{compra}|{venta}|",
        "version_parser": "taxauth_txt-1.0",
        "capturado_en": CAPTURED,
        "ejecucion_id": f"run-{obs_id}",
        "evidencia_id": f"ev-{obs_id}",
        "revision_creada": revision,
    }


def event(tipo: str, obs: dict, revision: int, **detalle: Any) -> dict:
    return {
        "id": f"{tipo}-{obs['id']}",
        "tipo": tipo,
        "ts": CAPTURED,
        "revision": revision,
        "ejecucion_id": obs["ejecucion_id"],
        "evidencia_id": obs["evidencia_id"],
        "detalle": detalle,
    }


def detail(obs: dict, ancestros=(), sucesoras=(), eventos=None, cotejos=()) -> dict:
    if eventos is None:
        eventos = [
            event(
                "capturada",
                obs,
                obs["revision_creada"],
                compra=obs["compra"],
                venta=obs["venta"],
                sha256=SHA,
            )
        ]
    return {
        "observacion": obs,
        "cadena": {"ancestros": list(ancestros), "sucesoras": list(sucesoras)},
        "eventos": eventos,
        "cotejos": list(cotejos),
        "superseded": bool(sucesoras),
    }


def headers(sha: str = SHA) -> dict[str, str]:
    return {
        "X-Sha256": sha,
        "ETag": f'"{sha}"',
        "X-Identidad-Consulta": IDENTITY,
        "X-Capturado-En": CAPTURED,
    }


def failures(checks: list[Check]) -> list[str]:
    return [c.line for c in checks if c.status == "fail"]


def chain_of_two() -> tuple[dict, dict]:
    """An observation (revision 2) corrected by a later one (revision 4), both details."""
    old, new = record("a", 2, venta="3.362"), record("b", 4)
    old_detail = detail(
        old,
        sucesoras=[new],
        eventos=[
            event("capturada", old, 2, compra="3.356", venta="3.362", sha256=SHA),
            event("supersedida", old, 4, superseded_por="b"),
        ],
    )
    new_detail = detail(
        new,
        ancestros=[old],
        eventos=[
            event("capturada", new, 4, compra="3.356", venta="3.364", sha256=SHA),
            event("correccion", new, 4, supersede="a"),
        ],
    )
    return old_detail, new_detail


# -- evidence --------------------------------------------------------------------------------


def test_good_evidence_passes_every_hash_and_header_check() -> None:
    checks, recorded = evidence_checks(detail(record("b", 4)), BODY, headers())
    assert failures(checks) == []
    assert recorded is not None and recorded["tipo"] == "capturada"
    assert "ok   sha256 matches X-Sha256" in [c.line for c in checks]


def test_bytes_that_do_not_hash_to_x_sha256_fail() -> None:
    checks, _ = evidence_checks(detail(record("b", 4)), BODY + b" ", headers())
    lines = failures(checks)
    assert any(line.startswith("FAIL sha256 ") and "X-Sha256" in line for line in lines)
    assert any("capturada event" in line for line in lines)


def test_a_capturada_event_recording_another_hash_fails() -> None:
    obs = record("b", 4)
    eventos = [event("capturada", obs, 4, compra="3.356", venta="3.364", sha256="0" * 64)]
    checks, _ = evidence_checks(detail(obs, eventos=eventos), BODY, headers())
    assert failures(checks) == [f"FAIL sha256 {SHA} != capturada event {'0' * 64}"]


def test_no_recording_event_is_a_failure() -> None:
    obs = record("b", 4)
    checks, recorded = evidence_checks(detail(obs, eventos=[]), BODY, headers())
    assert recorded is None
    assert failures(checks) == ["FAIL event no capturada or importada event records evidence ev-b"]


def test_identity_header_is_compared_percent_encoded_as_the_gateway_sends_it() -> None:
    assert header_text("IMPORT año.csv") == "IMPORT a%C3%B1o.csv"
    sent = "GET http://h/a%20b?q=ñ"
    assert header_text(sent) == "GET http://h/a%2520b?q=%C3%B1"
    assert urllib.parse.unquote(header_text(sent)) == sent


# -- values ----------------------------------------------------------------------------------


def test_a_value_differing_from_the_bytes_fails_with_both_values() -> None:
    obs = record("b", 4, venta="3.751")
    checks = value_checks(detail(obs), b"21/09/2026|3.356|3.752|", None)
    assert "FAIL value venta 3.751 != re-parsed 3.752" in failures(checks)


def test_matching_values_pass() -> None:
    checks = value_checks(detail(record("b", 4)), BODY, None)
    assert failures(checks) == []
    assert "ok   parser re-parsed with taxauth_txt-1.0" in [c.line for c in checks]


def test_another_parser_version_is_refused_not_compared() -> None:
    obs = record("b", 4) | {"version_parser": "taxauth_txt-2.0"}
    checks = value_checks(detail(obs), BODY, None)
    assert failures(checks) == [
        "FAIL parser observation was parsed by taxauth_txt-2.0; this install has "
        "taxauth_txt-1.0: values not re-parsed"
    ]


def test_bytes_the_parser_rejects_fail() -> None:
    checks = value_checks(detail(record("b", 4)), b"<html>oops</html>", None)
    [line] = failures(checks)
    assert line.startswith("FAIL value taxauth_txt-1.0 rejects the bytes")


def test_a_fragment_spanning_lines_prints_on_one_line() -> None:
    checks = value_checks(detail(record("b", 4) | {"fragmento": "x\ny"}), BODY, None)
    assert all("\n" not in c.line for c in checks)


# -- re-parse of each source ---------------------------------------------------------------


def test_an_import_is_re_parsed_at_the_line_its_event_recorded() -> None:
    given = ReparseInput("importado_csv-1.0", "IMPORT h.csv", CAPTURED, "2026-09-18", linea=2)
    parsed = reparse(CSV, given)
    assert (parsed.compra, parsed.venta, parsed.venta_cruda) == ("3.350", "3.363", "3.3625")
    assert parsed.fragmento == "2026-09-18,3.35,3.3625"
    with pytest.raises(ReparseMismatch, match="no value for 2026-09-18 at line 3"):
        reparse(CSV, dataclasses.replace(given, linea=3))


def test_an_unknown_parser_is_refused() -> None:
    with pytest.raises(ReparseRefused, match="not in this install"):
        reparse(BODY, ReparseInput("other-1.0", IDENTITY, CAPTURED, "2026-09-21"))


def test_the_text_file_for_another_date_is_a_mismatch() -> None:
    with pytest.raises(ReparseMismatch, match="no value for 2026-09-20"):
        reparse(BODY, ReparseInput("taxauth_txt-1.0", IDENTITY, CAPTURED, "2026-09-20"))


def test_the_monthly_history_is_re_parsed_with_the_month_of_its_identity() -> None:
    body = (
        b'[{"fecPublica":"03/11/2025","valTipo":"3.372","codTipo":"C"},'
        b'{"fecPublica":"03/11/2025","valTipo":"3.378","codTipo":"V"}]'
    )
    identity = "POST https://taxauth.test/listarTipoCambio?anio=2025&mes=10"
    parsed = reparse(body, ReparseInput("taxauth_mensual-1.0", identity, CAPTURED, "2025-11-03"))
    assert (parsed.compra, parsed.venta) == ("3.372", "3.378")


# -- the chain -------------------------------------------------------------------------------


def test_a_consistent_chain_passes_and_a_successor_is_a_notice() -> None:
    old, new = chain_of_two()
    checks = chain_checks(old, {"b": new})
    assert failures(checks) == []
    assert [c.status for c in checks] == ["ok", "notice"]
    assert checks[1].message.startswith("superseded_por b: superseded at revision 4")
    assert failures(chain_checks(new, {"a": old})) == []


def test_a_link_that_does_not_resolve_fails() -> None:
    old, _ = chain_of_two()
    assert failures(chain_checks(old, {"b": None})) == ["FAIL chain link b does not resolve"]


def test_a_link_whose_record_differs_from_the_chains_copy_fails() -> None:
    old, new = chain_of_two()
    new = copy.deepcopy(new)
    new["observacion"]["venta"] = "3.999"
    assert "FAIL chain link b differs from its record in cadena" in failures(
        chain_checks(old, {"b": new})
    )


def test_a_supersedida_event_that_does_not_point_to_the_successor_fails() -> None:
    old, new = chain_of_two()
    old["eventos"][1]["detalle"]["superseded_por"] = "c"
    assert failures(chain_checks(old, {"b": new})) == [
        "FAIL chain a supersedida events point to ['c'], not [b]"
    ]


def test_a_cycle_fails() -> None:
    old, _ = chain_of_two()
    old["cadena"]["ancestros"] = [old["cadena"]["sucesoras"][0]]
    [line] = failures(chain_checks(old, {}))
    assert "a cycle" in line


def test_members_disagreeing_about_the_chain_fail() -> None:
    old, new = chain_of_two()
    new["cadena"]["ancestros"] = []
    assert "FAIL chain b sees the chain ['b'], not ['a', 'b']" in failures(
        chain_checks(old, {"b": new})
    )


# -- a saved item ---------------------------------------------------------------------------


def item_of(obs: dict, marcas: list[str], superseded_por: str | None = None) -> dict:
    return {
        "fecha_serie": obs["fecha_serie"],
        "compra": obs["compra"],
        "venta": obs["venta"],
        "fuente": obs["fuente"],
        "cotejos": [],
        "tiene_discrepancia_abierta": False,
        "marcas": marcas,
        "observacion_id": obs["id"],
        "capturado_en": obs["capturado_en"],
        "superseded": False,
        "superseded_por": superseded_por,
    }


def test_an_item_served_before_its_correction_matches_its_observation() -> None:
    old, _ = chain_of_two()
    # Served at revision 3: valid then; marcas as of then exclude the later supersedida.
    assert failures(item_checks(item_of(old["observacion"], ["capturada"]), old, 3)) == []


def test_an_item_claiming_validity_after_its_correction_fails() -> None:
    old, _ = chain_of_two()
    lines = failures(item_checks(item_of(old["observacion"], ["capturada", "supersedida"]), old, 4))
    assert lines == ["FAIL item superseded by b at revision 4, yet served as valid at revision 4"]


def test_an_item_with_an_edited_value_or_wrong_successor_fails() -> None:
    old, _ = chain_of_two()
    item = item_of(old["observacion"], ["capturada"], superseded_por="z") | {"venta": "3.999"}
    assert failures(item_checks(item, old, 3)) == [
        "FAIL item venta 3.999 != observation 3.362",
        "FAIL item superseded_por z != the observation's successor b",
    ]


def test_an_item_created_after_the_responses_revision_fails() -> None:
    _, new = chain_of_two()
    item = item_of(new["observacion"], ["capturada", "correccion"])
    assert failures(item_checks(item, new, 3))[-1].startswith("FAIL item observation created")


# -- verdict and inputs ---------------------------------------------------------------------


def test_verdict_fails_only_on_a_failure_and_lists_notices_as_findings() -> None:
    notice = Check("notice", "chain", "superseded_por b", "a")
    ok = Check("ok", "sha256", "matches X-Sha256", "a")
    verdict = Verdict((ok, notice))
    assert verdict.to_json() == {"ok": True, "findings": [notice.finding()]}
    assert verdict.checked == 1
    assert Verdict((ok, Check("fail", "value", "x", "a"))).exit_code == 1


def test_a_saved_latest_body_is_one_item() -> None:
    saved = parse_saved_response(b'{"observacion_id": "x", "dataset_revision": 3}')
    assert (len(saved.items), saved.dataset_revision) == (1, 3)


@pytest.mark.parametrize("text", ["nope", "706171d6e09b41008581-85ff80219080", ""])
def test_a_malformed_id_is_refused(text: str) -> None:
    with pytest.raises(VerifyError):
        canonical_uuid(text)


def test_an_upper_case_id_is_canonicalised() -> None:
    assert canonical_uuid("706171D6-E09B-4100-8581-85FF80219080") == (
        "706171d6-e09b-4100-8581-85ff80219080"
    )


@pytest.mark.parametrize("check", ["value", "log", "proof"])
def test_every_finding_is_one_line_whichever_check_made_it(check: str) -> None:
    """A message carrying a CR or LF (a value the service sent, an error's text) is escaped by
    the finding itself, so no collector can forget it."""
    found = Check("fail", check, "bad\r\nFAIL  sha256 forged", "obs")
    assert found.message == "bad\\r\\nFAIL  sha256 forged"
    assert len(found.line.splitlines()) == 1
    assert found.finding()["message"] == found.message
