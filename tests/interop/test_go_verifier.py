"""An independent implementation accepts fxev's log: Go's ``golang.org/x/mod/sumdb`` code.

``golog/main.go`` fetches a real gateway's checkpoint and verifies its signature with
``sumdb/note``, then reads the C2SP tiles through ``tlog.TileHashReader`` (which checks each
tile against the signed root) and checks an inclusion proof of every leaf and a consistency
proof from every smaller size with ``tlog``. Go and the module come from Debian
(``tests/interop/install-go.sh``, run by ``make test``); the test skips only when ``go`` is
missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.contract.conftest import Gateway, run_fxev

HERE = Path(__file__).parent
GOPATH = "/usr/share/gocode"


@pytest.fixture(scope="module")
def golog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed (tests/interop/install-go.sh installs it)")
    binary = tmp_path_factory.mktemp("golog") / "golog"
    env = os.environ | {
        "GO111MODULE": "off",
        "GOPATH": GOPATH,
        "GOCACHE": str(binary.parent / "cache"),
        "GOFLAGS": "",
    }
    done = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=HERE / "golog",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return binary


def test_go_verifies_a_live_gateways_checkpoint_inclusion_and_consistency(
    golog: Path, gateway: Gateway
) -> None:
    vkey = run_fxev(gateway.env, "log", "key").stdout.strip()
    done = subprocess.run(
        [str(golog), gateway.base_url, vkey],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    size = gateway.get("/v1/rates/latest?currency=USD&series=publicado").json()["dataset_revision"]
    assert done.stdout.strip() == (
        f"ok {vkey.split('+')[0]} size={size} inclusion={size} consistency={size - 1}"
    )


def test_go_refuses_a_checkpoint_under_another_key(golog: Path, gateway: Gateway) -> None:
    other = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
    done = subprocess.run(
        [str(golog), gateway.base_url, other], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "checkpoint" in done.stderr
