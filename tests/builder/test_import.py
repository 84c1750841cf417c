"""``fxev import``: importado observations fill gaps, never replace, and re-import is a no-op."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.capture.importer import import_csv
from builder.capture.run import Stores
from builder.sources.import_csv import ImportFileError
from tests.builder.conftest import NOW, PCT

CSV = b"fecha_serie,compra,venta\n2026-09-18,3.35,3.3625\n2026-09-19,3.354,3.362\n"


def write(tmp_path: Path, data: bytes, name: str = "history.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_import_records_one_revision_with_evidence_fragment_and_event(stores: Stores, tmp_path):
    result = import_csv(stores, write(tmp_path, CSV), "ana", "copied from a printout", NOW, PCT)
    assert (result.revision, result.outcome) == (1, "nueva")
    assert [o.fecha_serie for o in result.observaciones] == ["2026-09-18", "2026-09-19"]
    first = stores.registry.observation(result.observaciones[0].observacion_id)
    assert (first.fuente, first.version_parser) == ("importado", "importado_csv-1.0")
    assert (first.compra, first.venta, first.venta_cruda) == ("3.350", "3.363", "3.3625")
    assert first.fragmento == "2026-09-18,3.35,3.3625"
    assert first.identidad_consulta == "IMPORT history.csv"
    evidence = stores.registry.evidence(first.evidencia_id)
    assert evidence.content_type == "text/csv"
    assert stores.blobs.read(evidence.sha256) == CSV
    [event] = stores.registry.events_of(first.id)
    assert event.tipo == "importada"
    assert event.detalle == {
        "actor": "ana",
        "justificacion": "copied from a printout",
        "linea": 2,
        "sha256": evidence.sha256,
    }


def test_importing_the_same_file_twice_records_nothing_the_second_time(stores, tmp_path):
    path = write(tmp_path, CSV)
    import_csv(stores, path, "ana", "origin", NOW, PCT)
    again = import_csv(stores, path, "ana", "origin", NOW, PCT)
    assert (again.revision, again.outcome) == (None, "sin_cambios")
    assert stores.registry.head().revision == 1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"fecha,compra,venta\n2026-09-18,3.35,3.36\n", "header"),
        (b"fecha_serie,compra,venta\n2026-02-30,3.35,3.36\n", "line 2"),
        (b"fecha_serie,compra,venta\n2026-09-18,3.35,3.36\n2026-09-19,tres,3.36\n", "line 3"),
        (b"fecha_serie,compra,venta\n2026-09-18,-3.35,3.36\n", "not positive"),
        (b"fecha_serie,compra,venta\n2026-09-18,0.0004,3.36\n", r"0.0004 \(served as 0.000\)"),
        (b"fecha_serie,compra,venta\n2026-09-18,0.335,0.336\n", "absurd magnitude"),
        (b"fecha_serie,compra,venta,moneda\n2026-09-18,3.35,3.36,EUR\n", "moneda"),
        (b"fecha_serie,compra,venta\n2026-09-18,3.35,3.36\n2026-09-18,3.35,3.36\n", "twice"),
        (b"fecha_serie,compra,venta\n", "no data"),
        (b"\xff\xfe\x00", "UTF-8"),
    ],
    ids=[
        "header",
        "date",
        "value",
        "negative",
        "served-as-zero",
        "shifted-point",
        "currency",
        "duplicate",
        "empty",
        "encoding",
    ],
)
def test_a_bad_file_is_rejected_whole_and_changes_nothing(stores, tmp_path, data, message):
    import_csv(stores, write(tmp_path, CSV, "good.csv"), "ana", "origin", NOW, PCT)
    with pytest.raises(ImportFileError, match=message):
        import_csv(stores, write(tmp_path, data), "ana", "origin", NOW, PCT)
    assert stores.registry.head().revision == 1


@pytest.mark.parametrize(
    ("data", "fragments", "lines"),
    [
        (
            b"fecha_serie,compra,venta\n2026-09-18,3.35,3.36\x0c\n2026-09-19,3.354,3.362\n",
            ["2026-09-18,3.35,3.36\x0c", "2026-09-19,3.354,3.362"],
            [2, 3],
        ),
        (
            b'fecha_serie,compra,venta\n2026-09-18,3.35,"3.36\n"\n2026-09-19,3.354,3.362\n',
            ['2026-09-18,3.35,"3.36\n"', "2026-09-19,3.354,3.362"],
            [2, 4],
        ),
        (
            b"fecha_serie,compra,venta\r2026-09-18,3.35,3.36\r2026-09-19,3.354,3.362\r",
            ["2026-09-18,3.35,3.36", "2026-09-19,3.354,3.362"],
            [2, 3],
        ),
        (
            b"fecha_serie,compra,venta\r\n2026-09-18,3.35,3.36\r\n2026-09-19,3.354,3.362",
            ["2026-09-18,3.35,3.36", "2026-09-19,3.354,3.362"],
            [2, 3],
        ),
        (
            b"fecha_serie,compra,venta\n\n2026-09-18,3.35,3.36\r\n\r\n\n2026-09-19,3.354,3.362\n\n",
            ["2026-09-18,3.35,3.36", "2026-09-19,3.354,3.362"],
            [3, 6],
        ),
    ],
    ids=[
        "form feed in a row",
        "line break in a quoted cell",
        "CR line ends",
        "CRLF, no last end",
        "empty lines between rows",
    ],
)
def test_each_observation_keeps_its_own_rows_text_as_fragment(
    stores, tmp_path, data, fragments, lines
):
    """DECISIONS 6: an import's `fragmento` is "its line" (SPEC: the exact portion the value was
    parsed from): the row's own text, cut where the CSV reader cuts rows, whatever else the text
    holds; `linea` is the line the row starts on."""
    result = import_csv(stores, write(tmp_path, data), "ana", "origin", NOW, PCT)
    found = [stores.registry.observation(o.observacion_id) for o in result.observaciones]
    assert [o.fragmento for o in found] == fragments
    events = [stores.registry.events_of(o.id)[0] for o in found]
    assert [e.detalle["linea"] for e in events] == lines


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'fecha_serie,compra,venta\n2026-09-18,3.35,"' + b"9" * 140_000 + b'"\n', "line 2: field"),
        (b'fecha_serie,compra,venta\n2026-09-18,3.35,"3.36\n', "line 2: unexpected end"),
        (
            b'fecha_serie,compra,venta\n2026-09-18,3.35,3.36\n2026-09-19,"3.354"2,3.362\n',
            "line 3: ','",
        ),
    ],
    ids=["a cell over the reader's limit", "a quote never closed", "text after a closing quote"],
)
def test_a_file_the_csv_reader_refuses_is_an_import_error(stores, tmp_path, data, message):
    """What the CSV reader cannot split, or splits only by guessing (a quote left open, text
    after a closing quote), is a refused file naming its line: not a crash, not a value made
    from a guess (a quote left open was imported as the rest of the file's text)."""
    with pytest.raises(ImportFileError, match=message):
        import_csv(stores, write(tmp_path, data), "ana", "origin", NOW, PCT)
    assert stores.registry.head() is None


def test_an_import_never_replaces_a_direct_observation(stores, capture, tmp_path):
    direct = capture(body="19/09/2026|3.354|3.362|")
    result = import_csv(
        stores, write(tmp_path, b"fecha_serie,compra,venta\n2026-09-19,3.100,3.200\n"),
        "ana", "origin", NOW, PCT,
    )  # fmt: skip
    assert result.outcome == "sin_cambios"
    assert stores.registry.valid_observation("USD", "publicado", "2026-09-19").id == (
        direct.observacion_id
    )


def test_a_direct_capture_supersedes_an_import_as_new_data(stores, capture, tmp_path):
    imported = import_csv(
        stores, write(tmp_path, b"fecha_serie,compra,venta\n2026-09-20,3.354,3.362\n"),
        "ana", "origin", NOW, PCT,
    )  # fmt: skip
    old_id = imported.observacion_id
    result = capture(body="20/09/2026|3.354|3.362|")
    assert result.outcome == "nueva"
    new = stores.registry.observation(result.observacion_id)
    assert new.supersedes == old_id
    assert [e.tipo for e in stores.registry.events_of(new.id)] == ["capturada"]
    assert [e.tipo for e in stores.registry.events_of(old_id)] == ["importada", "supersedida"]
    ancestors, _ = stores.registry.chain_at(new, result.revision)
    assert [a.id for a in ancestors] == [old_id]


def test_an_import_of_both_sides_of_a_pair_checks_it_once(stores: Stores, tmp_path):
    # Wednesday 2 September's publication points to Tuesday 1 September's close; the file holds
    # both, discrepant (3.360 against 3.361), so the pair is checked, and alerted, once.
    data = (
        b"fecha_serie,compra,venta,serie\n"
        b"2026-09-02,3.36,3.368,publicado\n"
        b"2026-09-01,3.3605,3.368,cierre\n"
    )
    result = import_csv(stores, write(tmp_path, data), "ana", "both series", NOW, PCT)
    cotejos = stores.registry.cotejos_of_revision(result.revision)
    assert sorted((c.contraparte_fecha, c.resultado) for c in cotejos) == [
        ("2026-09-01", "discrepante"),
        ("2026-09-02", "discrepante"),
    ]
    [alert] = [a for a in stores.alerts.list() if a.tipo == "discrepancia"]
    assert alert.contador == 1


ODD_ROWS = [
    b"2021-05-12,3.708,3.712\n",
    b"2021-05-13,3.726,3.725\n",
    b"2021-05-14,3.713,3.717\n",
    b"2021-05-15,4.084,4.089\n",
]


@pytest.mark.parametrize("order", ["oldest first", "newest first"])
def test_an_odd_value_imported_is_kept_and_marked_with_its_alert(
    stores: Stores, tmp_path: Path, order: str
) -> None:
    """DECISIONS 6: what a source published is recorded even when odd, marked
    ``plausibilidad_baja`` with an alert; an import says what a source published. The tax
    authority's 2021-05-13 (compra above venta) and a move of 10% from the date before it,
    measured from that date whatever the file's order."""
    rows = ODD_ROWS if order == "oldest first" else ODD_ROWS[::-1]
    data = b"fecha_serie,compra,venta\n" + b"".join(rows)
    result = import_csv(stores, write(tmp_path, data), "ana", "the real history", NOW, PCT)
    assert result.outcome == "nueva"
    marked = {}
    for outcome in result.observaciones:
        events = stores.registry.events_of(outcome.observacion_id)
        assert events[0].tipo == "importada"
        marked[outcome.fecha_serie] = [e.detalle for e in events if e.tipo == "plausibilidad_baja"]
    assert marked["2021-05-12"] == marked["2021-05-14"] == []
    [inverted] = marked["2021-05-13"]
    assert [m["motivo"] for m in inverted["motivos"]] == ["compra_mayor_que_venta"]
    [moved] = marked["2021-05-15"]
    assert [(m["motivo"], m["lado"]) for m in moved["motivos"]] == [
        ("movimiento", "compra"),
        ("movimiento", "venta"),
    ]
    assert moved["motivos"][0]["referencia_fecha_serie"] == "2021-05-14"
    alerts = [a for a in stores.alerts.list() if a.tipo == "plausibilidad_baja"]
    assert sorted(a.fecha_serie for a in alerts) == ["2021-05-13", "2021-05-15"]
    assert {a.estado for a in alerts} == {"abierta"}


def test_a_capture_after_an_import_is_measured_from_it(stores: Stores, capture, tmp_path):
    """The move of a capture is measured from the valid observation before it, an import too."""
    import_csv(
        stores, write(tmp_path, b"fecha_serie,compra,venta\n2026-09-19,3.000,3.010\n"),
        "ana", "origin", NOW, PCT,
    )  # fmt: skip
    result = capture(body="20/09/2026|3.354|3.362|")
    events = stores.registry.events_of(result.observacion_id)
    [odd] = [e.detalle for e in events if e.tipo == "plausibilidad_baja"]
    assert {m["referencia_fecha_serie"] for m in odd["motivos"]} == {"2026-09-19"}
