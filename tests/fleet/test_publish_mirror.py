"""``fxev publish`` and ``fxev mirror`` against a real S3 endpoint (SeaweedFS), no mocks.

A mirrored site is the operator's site, file for file, and answers the same through the
verified reader; a new revision moves only what it added; a tampered key in the store is
refused and the gateway's site keeps its revision; an immutable key is never overwritten.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from builder.render.explorer import pages
from builder.store import keys
from builder.tree import layout
from builder.tree.explorer import ExplorerReader
from builder.tree.reader import TreeReader
from tests.fleet.conftest import Fxev, Host, bucket_key, build, capture_and_build
from tests.fleet.seaweed import BUCKET, client

SKIPPED_ENTRIES = {layout.LOCK_FILE, layout.STAGING}


def env_of(host: Host, store_env: dict[str, str]) -> dict[str, str]:
    return {"FXEV_HOME": str(host.home), "FXEV_SITE": str(host.site), **store_env}


def gateway_env(site: Path, store_env: dict[str, str]) -> dict[str, str]:
    return {"FXEV_HOME": str(site.parent / "home"), "FXEV_SITE": str(site), **store_env}


def files_of(site: Path) -> dict[str, bytes | str]:
    """Every file of a site by path: bytes, or a link's target; without the lock and staging."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, names in os.walk(site):
        relative = Path(folder).relative_to(site)
        if relative == Path("."):
            dirs[:] = [d for d in dirs if d not in SKIPPED_ENTRIES]
        for name in names:
            path = Path(folder) / name
            key = str(relative / name)
            if key in SKIPPED_ENTRIES:
                continue
            found[key] = os.readlink(path) if path.is_symlink() else path.read_bytes()
    return found


def assert_same_answers(original: Path, mirrored: Path) -> None:
    """The mirrored site answers what the original does, through the verified readers."""
    a, b = TreeReader(original), TreeReader(mirrored)
    head = a.published_revision()
    assert head is not None and b.published_revision() == head
    for revision in range(1, head + 1):
        for serie in a.root(revision).served:
            page_a = a.rates(serie, "1900-01-01", "2100-12-31", revision, 0, 1000)
            assert page_a == b.rates(serie, "1900-01-01", "2100-12-31", revision, 0, 1000)
        assert a.coverage(revision) == b.coverage(revision)
        assert a.annotations(revision) == b.annotations(revision)
        for evidence_id in a.record(revision).evidence:
            assert a.evidence_meta(evidence_id, head) == b.evidence_meta(evidence_id, head)
        for observation_id in a.record(revision).details:
            assert a.detail(observation_id, head) == b.detail(observation_id, head)
    explorer_a, explorer_b = ExplorerReader(a), ExplorerReader(b)
    page_map = explorer_a.page_map(head)
    assert page_map is not None
    for route in page_map.pages:
        assert explorer_a.page(route, head) == explorer_b.page(route, head)
    assert files_of(original) == files_of(mirrored)


def test_publish_then_mirror_gives_the_operators_tree(
    operator: Host, gateway_site: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    head = TreeReader(operator.site).published_revision()
    first = fxev(env_of(operator, store_env), "publish")
    assert first.code == 0, first.err
    assert first.last["published_revision"] == head and first.last["skipped"] == 0
    assert first.last["uploaded"] > head

    again = fxev(env_of(operator, store_env), "publish")
    assert again.code == 0, again.err
    assert again.last == {"published_revision": head, "uploaded": 0, "skipped": 0}

    mirrored = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert mirrored.code == 0, mirrored.err
    assert mirrored.last["published_revision"] == head
    assert_same_answers(operator.site, gateway_site)

    idle = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert idle.last == {"published_revision": head, "fetched": 0}


def test_a_new_revision_moves_only_what_it_added(
    operator: Host, gateway_site: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    assert fxev(env_of(operator, store_env), "publish").code == 0
    assert fxev(gateway_env(gateway_site, store_env), "mirror").code == 0
    head = TreeReader(operator.site).published_revision()
    assert head is not None

    capture_and_build(operator)
    published = fxev(env_of(operator, store_env), "publish")
    assert published.code == 0, published.err
    result = published.last
    assert result["published_revision"] == head + 1
    # One capture: its record, evidence (bytes and link), a marker, a chunk and the nodes and
    # lists above it, a few explorer pages, the map, the publication, the pointer.
    assert 5 <= result["uploaded"] <= 30, result

    mirrored = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert mirrored.code == 0, mirrored.err
    fetched = mirrored.last["fetched"]
    assert mirrored.last["published_revision"] == head + 1
    assert 0 < fetched < result["uploaded"]  # links and markers: not fetched
    assert_same_answers(operator.site, gateway_site)


def test_a_tampered_object_is_refused_and_the_site_keeps_its_revision(
    operator: Host, gateway_site: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    assert fxev(env_of(operator, store_env), "publish").code == 0
    assert fxev(gateway_env(gateway_site, store_env), "mirror").code == 0
    before = (gateway_site / layout.POINTER).read_bytes()
    capture_and_build(operator)
    assert fxev(env_of(operator, store_env), "publish").code == 0

    tree = TreeReader(operator.site)
    head = tree.published_revision()
    assert head is not None
    evidence = next(iter(tree.record(head).evidence.values()))
    key = bucket_key(store_env, keys.object_key(evidence.sha256))
    s3 = client(store_env["FXEV_S3_ENDPOINT"])
    good = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    flipped = bytes([good[0] ^ 0x01]) + good[1:]
    s3.put_object(Bucket=BUCKET, Key=key, Body=flipped)

    refused = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert refused.code == 1
    assert refused.out == ""
    assert len(refused.err.strip().splitlines()) == 1
    assert "does not match its SHA-256" in refused.err and f"revision {head - 1}" in refused.err
    assert (gateway_site / layout.POINTER).read_bytes() == before
    assert TreeReader(gateway_site).published_revision() == head - 1

    s3.put_object(Bucket=BUCKET, Key=key, Body=good)
    healed = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert healed.code == 0, healed.err
    assert_same_answers(operator.site, gateway_site)


def test_a_tampered_record_is_refused(
    operator: Host, gateway_site: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    assert fxev(env_of(operator, store_env), "publish").code == 0
    s3 = client(store_env["FXEV_S3_ENDPOINT"])
    key = bucket_key(store_env, keys.record_key(3))
    good = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    s3.put_object(Bucket=BUCKET, Key=key, Body=good.replace(b'"revision":3', b'"revision":4', 1))

    refused = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert refused.code == 1
    assert len(refused.err.strip().splitlines()) == 1
    assert keys.record_key(3) in refused.err
    assert not (gateway_site / layout.POINTER).exists()


def test_publish_never_overwrites_a_key_with_other_bytes(
    operator: Host, store_env: dict[str, str], fxev: Fxev
) -> None:
    assert fxev(env_of(operator, store_env), "publish").code == 0
    pointer_key = bucket_key(store_env, keys.POINTER)
    s3 = client(store_env["FXEV_S3_ENDPOINT"])
    stored_pointer = s3.get_object(Bucket=BUCKET, Key=pointer_key)["Body"].read()
    head = orjson.loads(stored_pointer)["revision"]
    capture_and_build(operator)
    taken = bucket_key(store_env, keys.record_key(head + 1))
    s3.put_object(Bucket=BUCKET, Key=taken, Body=b"someone else's record")

    refused = fxev(env_of(operator, store_env), "publish")
    assert refused.code == 1
    assert refused.out == ""
    assert len(refused.err.strip().splitlines()) == 1
    assert "already holds other bytes" in refused.err and keys.record_key(head + 1) in refused.err
    after = s3.get_object(Bucket=BUCKET, Key=pointer_key)["Body"].read()
    assert after == stored_pointer


def test_publish_refuses_a_home_without_a_registry_and_a_site_without_a_pointer(
    operator: Host, tmp_path: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    no_home = {**env_of(operator, store_env), "FXEV_HOME": str(tmp_path / "nowhere")}
    refused = fxev(no_home, "publish")
    assert refused.code == 1 and refused.out == ""
    assert refused.err.strip().splitlines() == [
        f"fxev: no registry at {tmp_path / 'nowhere' / 'registry.sqlite'} (set FXEV_HOME to"
        " the right folder)"
    ]
    assert not (tmp_path / "nowhere").exists()

    no_site = {**env_of(operator, store_env), "FXEV_SITE": str(tmp_path / "empty-site")}
    refused = fxev(no_site, "publish")
    assert refused.code == 1 and refused.out == ""
    assert len(refused.err.strip().splitlines()) == 1
    assert "no published tree at" in refused.err

    unset = {**env_of(operator, store_env), "FXEV_STORE_URL": ""}
    refused = fxev(unset, "publish")
    assert refused.code == 1 and "FXEV_STORE_URL is not set" in refused.err


def test_new_templates_publish_a_base_that_replaces_the_mirrors_pages(
    operator: Host,
    gateway_site: Path,
    store_env: dict[str, str],
    fxev: Fxev,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """New templates redraw every page at the same revision: the observation pages get other
    bytes under the same site path, so the store keeps pages by content and the publication
    that lists them all is a base; a mirror replaces its pages, and still matches."""
    assert fxev(env_of(operator, store_env), "publish").code == 0
    assert fxev(gateway_env(gateway_site, store_env), "mirror").code == 0
    drawn = pages.observation_page
    monkeypatch.setattr(pages, "template_fingerprint", lambda: "new templates")
    monkeypatch.setattr(pages, "observation_page", lambda page: drawn(page) + b"<!-- new -->\n")
    build(operator)

    published = fxev(env_of(operator, store_env), "publish")
    assert published.code == 0, published.err
    assert published.last["uploaded"] > 2  # new observation pages
    mirrored = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert mirrored.code == 0, mirrored.err
    assert mirrored.last["fetched"] > 2
    assert_same_answers(operator.site, gateway_site)
    assert fxev(env_of(operator, store_env), "publish").last["uploaded"] == 0
