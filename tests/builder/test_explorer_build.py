"""The build renders the explorer as part of the publish, redrawing only what changed.

What a page "is" here is what the gateway serves for it at the published revision
(``ExplorerReader``, the gateway's own reader): the pages of that revision's map, and for an
observation the page of the detail version the API serves.
"""

from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from builder.capture.importer import import_csv
from builder.capture.run import CaptureResult, Stores
from builder.disk.faults import BUILD_POINTS
from builder.publish import explorer as explorer_module
from builder.publish import explorerplan
from builder.publish.build import Builder
from builder.publish.explorer import ExplorerResult, ExplorerWriter
from builder.publish.writer import TreeWriter
from builder.registry.store import Registry
from builder.render.explorer import views
from builder.tree import explorer as stored
from builder.tree.explorer import ExplorerReader
from builder.tree.layout import EXPLORER_DIR, OBSERVATIONS, POINTER
from builder.tree.reader import TreeReader
from tests.builder.conftest import NOW, PCT

CSV = """fecha_serie,compra,venta
2025-12-30,3.360,3.370
2025-12-31,3.361,3.371
2026-01-02,3.362,3.372
2026-09-17,3.350,3.358
2026-09-18,3.352,3.360
"""


def build(stores: Stores, site: Path) -> TreeWriter:
    tree = TreeWriter(site)
    Builder(stores.registry, stores.blobs, tree).build()
    return tree


def render_explorer(tree: TreeWriter, registry: Registry) -> ExplorerResult:
    """Bring the explorer up to the published revision (a no-op when it is) and sweep: a build's
    two explorer steps without the pointer's switch between them."""
    revision = tree.published_revision()
    if revision is None:
        return ExplorerResult(None, ())
    writer = ExplorerWriter(tree, registry)
    result = writer.prepare(revision)
    writer.sweep(result)
    return result


def files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith(".tmp-")
    }


def served(site: Path) -> dict[str, bytes]:
    """Every page the gateway serves at the published revision, by route."""
    reader = ExplorerReader(TreeReader(site))
    revision = reader.tree.published_revision()
    assert revision is not None
    page_map = reader.page_map(revision)
    assert page_map is not None and page_map.revision == revision
    routes = list(page_map.pages)
    routes += [f"observacion/{i}.html" for i in sorted(os.listdir(site / OBSERVATIONS))]
    pages = {route: reader.page(route, revision) for route in routes}
    return {route: body for route, body in pages.items() if body is not None}


def published_map(site: Path) -> dict[str, tuple[str, str]]:
    reader = ExplorerReader(TreeReader(site))
    revision = reader.tree.published_revision()
    assert revision is not None
    page_map = reader.page_map(revision)
    assert page_map is not None
    return page_map.pages


@pytest.fixture
def imported(stores: Stores, tmp_path: Path) -> Path:
    csv = tmp_path / "history.csv"
    csv.write_text(CSV)
    import_csv(stores, csv, "tester", "test history", datetime.fromisoformat(str(NOW)), PCT)
    site = tmp_path / "site"
    build(stores, site)
    return site


def rendered_by_next_build(stores: Stores, site: Path) -> set[str]:
    """The routes whose page the next build changed; and it wrote no other page file."""
    before, stored_before = served(site), files(site / EXPLORER_DIR)
    build(stores, site)
    after, stored_after = served(site), files(site / EXPLORER_DIR)
    changed = {route for route in after if before.get(route) != after[route]}
    written = {
        name
        for name in stored_after
        if stored_before.get(name) != stored_after[name] and not name.startswith("maps/")
    }
    assert len(written) <= len(changed)  # a page file per changed page at most (log pages share)
    return changed


def test_first_build_renders_every_page_of_the_published_revision(imported: Path) -> None:
    pages = set(served(imported))
    assert {
        "index.html",
        "serie/publicado/index.html",
        "serie/publicado/2025.html",
        "serie/publicado/2026.html",
        "cobertura/publicado/2025.html",
        "cobertura/publicado/2026.html",
        "revisiones/1.html",
        "revisiones/index.html",
    } <= pages
    assert len([p for p in pages if p.startswith("observacion/")]) == 5
    page_map = orjson.loads((imported / EXPLORER_DIR / "maps" / "1.json").read_bytes())
    assert page_map["revision"] == TreeWriter(imported).published_revision() == 1
    assert sorted(os.listdir(imported / EXPLORER_DIR / "maps")) == ["1.json"]


def test_a_capture_in_2026_redraws_2026_and_leaves_2025_alone(
    imported: Path, stores: Stores, capture: Callable[..., CaptureResult]
) -> None:
    result = capture("20/09/2026|3.354|3.362|\r\n")
    assert result.outcome == "nueva"
    map_before = published_map(imported)
    changed = rendered_by_next_build(stores, imported)
    assert "serie/publicado/2026.html" in changed
    assert "cobertura/publicado/2026.html" in changed
    assert f"observacion/{result.observacion_id}.html" in changed
    assert {"index.html", "revisiones/1.html", "revisiones/index.html"} <= changed
    assert not {p for p in changed if "2025" in p}
    map_after = published_map(imported)
    assert {r: map_after[r] for r in map_after if "2025" in r} == {
        r: map_before[r] for r in map_before if "2025" in r
    }
    unchanged_import = [p for p in served(imported) if p.startswith("observacion/")]
    assert len([p for p in changed if p.startswith("observacion/")]) == 1 < len(unchanged_import)


def test_a_build_with_nothing_new_writes_nothing(imported: Path, stores: Stores) -> None:
    before = files(imported / EXPLORER_DIR)
    assert rendered_by_next_build(stores, imported) == set()
    assert files(imported / EXPLORER_DIR) == before


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
    page = served(imported)[f"observacion/{first.observacion_id}.html"].decode()
    assert "Reemplazada" in page and str(corrected.observacion_id) in page
    # Once published, the superseded version's page is no longer served: only the new one stays.
    versions = sorted(
        name
        for name in os.listdir(imported / EXPLORER_DIR / stored.OBSERVATION_PAGES)
        if name.startswith(f"{first.observacion_id}.")
    )
    assert len(versions) == 1
    assert versions[0] == f"{first.observacion_id}.{TreeWriter(imported).published_revision()}.html"


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
    render_explorer(TreeWriter(fresh), stores.registry)
    assert files(fresh / EXPLORER_DIR) == files(imported / EXPLORER_DIR)


def test_a_long_log_takes_its_full_pages_from_the_map_and_draws_only_the_newest(
    imported: Path,
    stores: Stores,
    capture: Callable[..., CaptureResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(views, "REVISIONS_PER_PAGE", 2)  # another page size: all drawn again
    for day in range(21, 28):  # a revision each: the log grows to 4 pages of 2
        capture(f"{day}/09/2026|3.{day}0|3.{day}8|\r\n")
        build(stores, imported)
    published = TreeWriter(imported).published_revision()
    assert published == 8 and views.revision_page_of(published) == 4
    capture("28/09/2026|3.280|3.288|\r\n")
    changed = rendered_by_next_build(stores, imported)
    log_pages = {route for route in changed if route.startswith("revisiones/")}
    assert log_pages == {"revisiones/4.html", "revisiones/5.html", "revisiones/index.html"}
    fresh = tmp_path / "fresh"
    shutil.copytree(imported, fresh, symlinks=True)
    shutil.rmtree(fresh / EXPLORER_DIR)
    render_explorer(TreeWriter(fresh), stores.registry)
    assert files(fresh / EXPLORER_DIR) == files(imported / EXPLORER_DIR)


def test_settled_log_pages_stop_at_the_first_page_the_map_lacks() -> None:
    entries = {f"revisiones/{n}.html": (f"key{n}", f"sha{n}") for n in (1, 2, 4, 5)}
    base = stored.PageMap(251, "layout", entries)  # 50 a page: pages 1-5 were full, 6 was not
    assert explorerplan.settled_log_pages(base) == {
        "revisiones/1.html": ("key1", "sha1"),
        "revisiones/2.html": ("key2", "sha2"),
    }
    assert explorerplan.settled_log_pages(stored.PageMap(50, "layout", entries)) == {}
    assert explorerplan.settled_log_pages(stored.PageMap(0, "layout", {})) == {}


def test_a_template_change_redraws_every_page(
    imported: Path, stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(explorerplan.pages, "template_fingerprint", lambda: "another layout")
    drawn = set(served(imported))
    result = render_explorer(TreeWriter(imported), stores.registry)
    assert set(result.rendered) == drawn
    # Observation pages, as many as observations, are in no map.
    observations = {page for page in drawn if page.startswith("observacion/")}
    assert observations and set(published_map(imported)) == drawn - observations
    assert set(served(imported)) == drawn
    assert len(os.listdir(imported / EXPLORER_DIR / stored.MAPS)) == 1


# -- the explorer switches with the pointer, not before nor after ---------------------------------


def test_the_explorer_switches_revision_with_the_pointer_and_not_before(
    imported: Path, stores: Stores, capture: Callable[..., CaptureResult], home: Path
) -> None:
    assert "build_before_pointer" in BUILD_POINTS
    result = capture("20/09/2026|3.354|3.362|\r\n")
    new_page = f"observacion/{result.observacion_id}.html"
    before = served(imported)
    pointer = (imported / POINTER).read_bytes()

    # Killed once the explorer of revision 2 is written, right before the pointer names it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env |= {"FXEV_HOME": str(home), "FXEV_SITE": str(imported)}
    env["FXEV_FAULT_KILL_AT"] = "build_before_pointer"
    proc = subprocess.run(
        [sys.executable, "-m", "builder", "build"], env=env, capture_output=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert stored.map_path(imported, 2).exists()  # revision 2's explorer is in place, unserved
    assert (imported / POINTER).read_bytes() == pointer
    # Served as revision 1 everywhere, byte for byte: no page shows revision 2.
    assert served(imported) == before
    assert b"Revisi\xc3\xb3n publicada 1 " in before["index.html"]
    assert b'id="r2"' not in before["revisiones/index.html"]
    assert new_page not in before
    assert b"2026-09-20" not in before["serie/publicado/2026.html"]

    build(stores, imported)
    after = served(imported)
    assert TreeReader(imported).published_revision() == 2
    assert b"Revisi\xc3\xb3n publicada 2 " in after["index.html"]
    assert b'id="r2"' in after["revisiones/index.html"]
    assert new_page in after
    assert b"2026-09-20" in after["serie/publicado/2026.html"]
    # Only revision 2's map and the pages it names are left.
    explorer = imported / EXPLORER_DIR
    assert sorted(os.listdir(explorer / stored.MAPS)) == ["2.json"]
    named = {f"{digest}.html" for _, digest in published_map(imported).values()}
    assert set(os.listdir(explorer / stored.PAGES)) == named


def named_pages(site: Path) -> set[str]:
    return {f"{digest}.html" for _, digest in published_map(site).values()}


@pytest.mark.parametrize("point", ["build_explorer_map", "build_before_pointer"])
def test_what_a_killed_build_left_is_swept_by_the_next_build_of_a_later_revision(
    imported: Path,
    stores: Stores,
    capture: Callable[..., CaptureResult],
    home: Path,
    point: str,
) -> None:
    """Killed once its map is written (before its pages, or just before the pointer), a build
    leaves a map that is neither the published one nor the one after it: the next build, of a
    later revision, lists the folders and removes all that its map does not name."""
    assert point in BUILD_POINTS
    pages = imported / EXPLORER_DIR / stored.PAGES
    named_at_1 = named_pages(imported)
    capture("20/09/2026|3.354|3.362|\r\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env |= {"FXEV_HOME": str(home), "FXEV_SITE": str(imported), "FXEV_FAULT_KILL_AT": point}
    proc = subprocess.run(
        [sys.executable, "-m", "builder", "build"], env=env, capture_output=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert stored.map_path(imported, 2).exists()
    left = set(os.listdir(pages)) - named_at_1
    assert bool(left) == (point == "build_before_pointer")  # revision 2's home, its log...

    capture("21/09/2026|3.356|3.364|\r\n")
    build(stores, imported)
    assert TreeReader(imported).published_revision() == 3
    assert os.listdir(imported / EXPLORER_DIR / stored.MAPS) == ["3.json"]
    assert set(os.listdir(pages)) == named_pages(imported)
    assert not left & named_pages(imported)


def test_an_ordinary_build_removes_its_base_pages_without_listing_every_page(
    imported: Path,
    stores: Stores,
    capture: Callable[..., CaptureResult],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pages to remove after an ordinary build are those the previous map names and the new
    one does not: the build does not list ``pages/``, which grows with the revision log."""
    pages = imported / EXPLORER_DIR / stored.PAGES
    before = set(os.listdir(pages))
    listed: list[str] = []
    names = explorer_module._names
    monkeypatch.setattr(
        explorer_module, "_names", lambda folder: listed.append(folder.name) or names(folder)
    )
    capture("20/09/2026|3.354|3.362|\r\n")
    build(stores, imported)
    assert stored.PAGES not in listed and stored.MAPS in listed
    assert os.listdir(imported / EXPLORER_DIR / stored.MAPS) == ["2.json"]
    assert set(os.listdir(pages)) == named_pages(imported)
    assert before - named_pages(imported)  # revision 1's home page, among others, removed


def test_a_reader_of_the_previous_revision_finds_its_pages_until_the_sweep(
    imported: Path, stores: Stores, capture: Callable[..., CaptureResult]
) -> None:
    """Between the pointer's switch and the sweep both revisions' pages are there; after it, a
    reader that still asks for revision 1 finds nothing and asks the pointer again."""
    reader = ExplorerReader(TreeReader(imported))
    old = reader.page("index.html", 1)
    assert old is not None
    capture("20/09/2026|3.354|3.362|\r\n")
    build(stores, imported)
    assert reader.page("index.html", 1) is None
    assert reader.page("index.html", 2) is not None


# -- what the explorer reads ----------------------------------------------------------------------


def test_the_explorer_runs_no_sql_and_reads_the_registry_through_its_public_methods() -> None:
    sources = [Path(module.__file__).read_text() for module in (explorer_module, explorerplan)]
    called: set[str] = set()
    for node in (node for source in sources for node in ast.walk(ast.parse(source))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names] + [getattr(node, "module", "") or ""]
            assert not any("sqlite" in name for name in names)
        if not isinstance(node, ast.Attribute):
            continue
        assert node.attr not in {"conn", "execute", "executemany", "executescript", "cursor"}
        owner = node.value
        if (isinstance(owner, ast.Name) and owner.id == "registry") or (
            isinstance(owner, ast.Attribute) and owner.attr == "registry"
        ):
            called.add(node.attr)
    readers = {
        name
        for name, value in vars(Registry).items()
        if callable(value) and not name.startswith("_") and name not in {"write", "close"}
    }
    assert called and called <= readers, called - readers
