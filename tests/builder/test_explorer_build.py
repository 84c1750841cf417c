"""The build renders the explorer for the published revision, redrawing only what changed."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from builder.build import Builder
from builder.capture import CaptureResult, Stores
from builder.explorer.site import EXPLORER_DIR, MANIFEST, render_explorer
from builder.importer import import_csv
from builder.tree import Tree
from tests.builder.conftest import NOW

CSV = """fecha_serie,compra,venta
2025-12-30,3.360,3.370
2025-12-31,3.361,3.371
2026-01-02,3.362,3.372
2026-09-17,3.350,3.358
2026-09-18,3.352,3.360
"""


def build(stores: Stores, site: Path) -> Tree:
    tree = Tree(site)
    Builder(stores.registry, stores.blobs, tree).build()
    return tree


def files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith(".tmp-")
    }


@pytest.fixture
def imported(stores: Stores, tmp_path: Path) -> Path:
    csv = tmp_path / "history.csv"
    csv.write_text(CSV)
    import_csv(stores, csv, "tester", "test history", datetime.fromisoformat(str(NOW)))
    site = tmp_path / "site"
    build(stores, site)
    return site


def rendered_by_next_build(stores: Stores, site: Path) -> set[str]:
    before = files(site / EXPLORER_DIR)
    build(stores, site)
    after = files(site / EXPLORER_DIR)
    return {name for name in after if before.get(name) != after[name]} - {MANIFEST}


def test_first_build_renders_every_page_of_the_published_revision(imported: Path) -> None:
    pages = set(files(imported / EXPLORER_DIR))
    assert {
        "index.html",
        "serie/publicado/index.html",
        "serie/publicado/2025.html",
        "serie/publicado/2026.html",
        "cobertura/publicado/2025.html",
        "cobertura/publicado/2026.html",
        "revisiones/1.html",
        "revisiones/index.html",
        MANIFEST,
    } <= pages
    assert len([p for p in pages if p.startswith("observacion/")]) == 5
    manifest = orjson.loads((imported / EXPLORER_DIR / MANIFEST).read_bytes())
    assert manifest["revision"] == Tree(imported).published_revision() == 1


def test_a_capture_in_2026_redraws_2026_and_leaves_2025_alone(
    imported: Path, stores: Stores, capture: Callable[..., CaptureResult]
) -> None:
    result = capture("20/09/2026|3.354|3.362|\r\n")
    assert result.outcome == "nueva"
    changed = rendered_by_next_build(stores, imported)
    assert "serie/publicado/2026.html" in changed
    assert "cobertura/publicado/2026.html" in changed
    assert f"observacion/{result.observacion_id}.html" in changed
    assert {"index.html", "revisiones/1.html", "revisiones/index.html"} <= changed
    assert not {p for p in changed if "2025" in p}
    unchanged_import = [p for p in files(imported / EXPLORER_DIR) if p.startswith("observacion/")]
    assert len([p for p in changed if p.startswith("observacion/")]) == 1 < len(unchanged_import)


def test_a_build_with_nothing_new_writes_nothing(imported: Path, stores: Stores) -> None:
    manifest = (imported / EXPLORER_DIR / MANIFEST).read_bytes()
    assert rendered_by_next_build(stores, imported) == set()
    assert (imported / EXPLORER_DIR / MANIFEST).read_bytes() == manifest


def test_a_correction_redraws_both_observations_of_the_chain(
    imported: Path, stores: Stores, capture: Callable[..., CaptureResult]
) -> None:
    first = capture("20/09/2026|3.354|3.362|\r\n")
    build(stores, imported)
    corrected = capture("20/09/2026|3.356|3.364|\r\n")
    assert corrected.outcome == "correccion"
    changed = rendered_by_next_build(stores, imported)
    assert f"observacion/{first.observacion_id}.html" in changed
    assert f"observacion/{corrected.observacion_id}.html" in changed
    page = (imported / EXPLORER_DIR / f"observacion/{first.observacion_id}.html").read_text()
    assert "Reemplazada" in page and str(corrected.observacion_id) in page


def test_incremental_pages_equal_a_full_render_of_the_same_revision(
    imported: Path, stores: Stores, capture: Callable[..., CaptureResult], tmp_path: Path
) -> None:
    capture("20/09/2026|3.354|3.362|\r\n")
    build(stores, imported)
    capture("20/09/2026|3.356|3.364|\r\n")
    build(stores, imported)
    fresh = tmp_path / "fresh"
    shutil.copytree(imported, fresh, symlinks=True)  # evidence/<id>.json are links
    shutil.rmtree(fresh / EXPLORER_DIR)
    render_explorer(Tree(fresh), stores.registry)
    assert files(fresh / EXPLORER_DIR) == files(imported / EXPLORER_DIR)


def test_a_template_change_redraws_every_page(
    imported: Path, stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builder.explorer import site

    monkeypatch.setattr(site.pages, "template_fingerprint", lambda: "another layout")
    manifest = orjson.loads((imported / EXPLORER_DIR / MANIFEST).read_bytes())
    drawn = {page for page in files(imported / EXPLORER_DIR) if page != MANIFEST}
    result = render_explorer(Tree(imported), stores.registry)
    assert set(result.rendered) == drawn
    # Observation pages, as many as observations, keep no key in the manifest.
    observations = {page for page in drawn if page.startswith("observacion/")}
    assert observations and set(manifest["keys"]) == drawn - observations
