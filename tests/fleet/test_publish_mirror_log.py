"""``fxev publish`` and ``fxev mirror`` carry the transparency log (docs/operating/fleet.md).

A mirrored site holds the operator's ``log/`` file for file, and a new revision moves only the
log files it changed: the new partial tiles, the checkpoint of the new size. A store whose tiles
or entry bundles do not lead to its checkpoint's root is refused before anything moves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.capture.run import Stores
from builder.publish.build import Builder
from builder.publish.log import LogSigner
from builder.publish.writer import TreeWriter
from builder.tree.reader import TreeReader
from tests.fleet.conftest import LATER_START, Fxev, Host, bucket_key
from tests.fleet.seaweed import BUCKET, client
from tests.fleet.test_publish_mirror import env_of, files_of, gateway_env
from tests.support.synth import Synth


def build_with_log(host: Host) -> None:
    stores = Stores.open(host.home)
    try:
        Builder(stores.registry, stores.blobs, TreeWriter(host.site), LogSigner(host.home)).build()
    finally:
        stores.close()


def log_of(site: Path) -> dict[str, bytes | str]:
    return {k: v for k, v in files_of(site).items() if k.startswith("log/")}


def test_the_log_is_published_and_mirrored_file_for_file(
    operator: Host, gateway_site: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    build_with_log(operator)  # the seeded tree gains its log, from the first revision
    head = TreeReader(operator.site).published_revision()
    assert (operator.site / "log" / "checkpoints" / str(head)).exists()
    assert fxev(env_of(operator, store_env), "publish").code == 0
    mirrored = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert mirrored.code == 0, mirrored.err
    assert log_of(gateway_site) == log_of(operator.site)

    with Synth(operator.home, seed=7, start=LATER_START, captures_per_date=2) as synth:
        synth.advance(1)
    build_with_log(operator)
    published = fxev(env_of(operator, store_env), "publish")
    assert published.code == 0, published.err
    mirrored = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert mirrored.code == 0, mirrored.err
    assert mirrored.last["published_revision"] == head + 1
    assert log_of(gateway_site) == log_of(operator.site)
    assert files_of(gateway_site) == files_of(operator.site)


@pytest.mark.parametrize("tiles", ["0", "entries"])
def test_a_store_whose_tiles_do_not_lead_to_its_checkpoint_is_refused(
    tiles: str, operator: Host, gateway_site: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    """A hash tile, or an entry bundle (its entries are the leaves the level-0 hashes hash),
    changed by one bit in the store: the mirror places nothing."""
    build_with_log(operator)
    head = TreeReader(operator.site).published_revision()
    assert head is not None
    assert fxev(env_of(operator, store_env), "publish").code == 0
    partial = next((operator.site / "log" / "tile" / tiles).rglob("*.p/*"))
    key = bucket_key(store_env, str(partial.relative_to(operator.site)))
    data = bytearray(partial.read_bytes())
    data[0] ^= 1
    client(store_env["FXEV_S3_ENDPOINT"]).put_object(Bucket=BUCKET, Key=key, Body=bytes(data))
    refused = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert refused.code == 1, refused.out
    assert "checkpoint" in refused.err
    assert TreeReader(gateway_site).pointer() is None
    assert not (gateway_site / "log").exists()
