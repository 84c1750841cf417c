"""``fxev publish --repair`` against a real S3 endpoint (SeaweedFS): a store that lost keys, or
holds other bytes under them, is made whole again from the operator's site, and a mirror stuck
on the damage then catches up.

A plain ``fxev publish`` works from the store's pointer (what the builds since it added), so it
cannot see a key the store lost after it was written: the repair checks every key of the
published tree against the site's bytes (docs/operating/fleet.md#repair).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from builder.store import keys
from builder.tree.explorer import ExplorerReader
from builder.tree.reader import TreeReader
from tests.fleet.conftest import Fxev, Host, bucket_key, capture_and_build
from tests.fleet.seaweed import BUCKET, client
from tests.fleet.test_publish_mirror import assert_same_answers, env_of, gateway_env


def test_repair_puts_back_lost_and_tampered_keys_and_the_mirror_catches_up(
    operator: Host, gateway_site: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    assert fxev(env_of(operator, store_env), "publish").code == 0
    assert fxev(gateway_env(gateway_site, store_env), "mirror").code == 0
    capture_and_build(operator)
    assert fxev(env_of(operator, store_env), "publish").code == 0
    tree = TreeReader(operator.site)
    head = tree.published_revision()
    assert head is not None

    s3 = client(store_env["FXEV_S3_ENDPOINT"])
    evidence = next(iter(tree.record(head).evidence.values()))
    tampered = bucket_key(store_env, keys.object_key(evidence.sha256))
    good = s3.get_object(Bucket=BUCKET, Key=tampered)["Body"].read()
    s3.put_object(Bucket=BUCKET, Key=tampered, Body=bytes([good[0] ^ 0x01]) + good[1:])
    page_map = ExplorerReader(tree).page_map(head)
    assert page_map is not None
    _, page_sha = next(iter(page_map.pages.values()))
    lost = [keys.record_key(head), keys.record_key(1), keys.page_key(page_sha)]
    for key in lost:
        s3.delete_object(Bucket=BUCKET, Key=bucket_key(store_env, key))

    stuck = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert stuck.code == 1 and TreeReader(gateway_site).published_revision() == head - 1
    plain = fxev(env_of(operator, store_env), "publish")
    assert plain.last == {"published_revision": head, "uploaded": 0, "skipped": 0}

    repaired = fxev(env_of(operator, store_env), "publish", "--repair")
    assert repaired.code == 0, repaired.err
    result = repaired.last
    assert result["published_revision"] == head
    assert result["replaced"] == 1  # the tampered object; the lost keys are written anew
    # the lost keys, the tampered one, the new base publication and the pointer
    assert result["uploaded"] == len(lost) + 1 + 2, result
    assert result["skipped"] > head
    assert s3.get_object(Bucket=BUCKET, Key=tampered)["Body"].read() == good
    for key in lost:
        s3.head_object(Bucket=BUCKET, Key=bucket_key(store_env, key))

    caught_up = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert caught_up.code == 0, caught_up.err
    assert caught_up.last["published_revision"] == head
    assert_same_answers(operator.site, gateway_site)

    fresh = gateway_site.parent / "fresh-site"  # a new host mirrors the whole tree
    fresh.mkdir()
    whole = fxev(gateway_env(fresh, store_env), "mirror")
    assert whole.code == 0, whole.err
    assert_same_answers(operator.site, fresh)

    again = fxev(env_of(operator, store_env), "publish", "--repair")
    assert again.code == 0, again.err
    assert again.last["uploaded"] == 1 and again.last["replaced"] == 0  # the pointer alone
    assert fxev(env_of(operator, store_env), "publish").last["uploaded"] == 0


def test_repair_refuses_what_a_publish_refuses_and_writes_nothing(
    operator: Host, store_env: dict[str, str], fxev: Fxev
) -> None:
    """A store holding a revision this site lacks is not this site's to repair."""
    assert fxev(env_of(operator, store_env), "publish").code == 0
    pointer_key = bucket_key(store_env, keys.POINTER)
    s3 = client(store_env["FXEV_S3_ENDPOINT"])
    stored = s3.get_object(Bucket=BUCKET, Key=pointer_key)["Body"].read()
    ahead = orjson.loads(stored)
    ahead["revision"] += 5
    s3.put_object(Bucket=BUCKET, Key=pointer_key, Body=orjson.dumps(ahead))

    refused = fxev(env_of(operator, store_env), "publish", "--repair")
    assert refused.code == 1
    assert refused.out == ""
    assert len(refused.err.strip().splitlines()) == 1
    assert "ahead of this site's" in refused.err
    assert s3.get_object(Bucket=BUCKET, Key=pointer_key)["Body"].read() == orjson.dumps(ahead)


@pytest.mark.parametrize("argument", ["--repair=yes", "--repairs"])
def test_a_misspelt_repair_is_a_usage_error_and_writes_nothing(
    operator: Host,
    store_env: dict[str, str],
    fxev: Fxev,
    capsys: pytest.CaptureFixture[str],
    argument: str,
) -> None:
    with pytest.raises(SystemExit) as exited:
        fxev(env_of(operator, store_env), "publish", argument)
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("fxev") and ": error: " in err and len(err.splitlines()) == 1
    s3 = client(store_env["FXEV_S3_ENDPOINT"])
    prefix = bucket_key(store_env, "")
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("KeyCount", 0) == 0
