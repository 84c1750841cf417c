"""The HTTP edge of ``fxev verify``: token, Retry-After, and errors that are not verdicts.

The network is ``responses`` here; the real gateway is in tests/contract/test_verify.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest
import requests
import responses

from builder import cli
from verifier.client import CHECKPOINT_MAX, MAX_RATE_LIMIT_WAITS, ApiClient, ClientError

BASE = "https://fxev.test"
OBS = "706171d6-e09b-4100-8581-85ff80219080"
OBS_URL = f"{BASE}/v1/observations/{OBS}"


@pytest.fixture
def api() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def client(slept: list[float] | None = None) -> ApiClient:
    waits = slept if slept is not None else []
    return ApiClient(BASE + "/", "fxev_secret", sleep=waits.append)


def test_the_bearer_token_is_sent_and_the_detail_decoded(api: responses.RequestsMock) -> None:
    api.get(OBS_URL, json={"observacion": {"id": OBS}})
    assert client().observation(OBS) == {"observacion": {"id": OBS}}
    assert api.calls[0].request.headers["Authorization"] == "Bearer fxev_secret"


def test_a_detail_is_asked_once_per_run(api: responses.RequestsMock) -> None:
    api.get(OBS_URL, json={"observacion": {"id": OBS}})
    asking = client()
    asking.observation(OBS)
    asking.observation(OBS)
    assert len(api.calls) == 1


def test_429_waits_retry_after_then_asks_again(api: responses.RequestsMock) -> None:
    api.get(OBS_URL, status=429, headers={"Retry-After": "7"}, json={"code": "RATE_LIMITED"})
    api.get(OBS_URL, json={"observacion": {"id": OBS}})
    slept: list[float] = []
    assert client(slept).observation(OBS) == {"observacion": {"id": OBS}}
    assert slept == [7.0]


def test_429_that_never_ends_is_an_error(api: responses.RequestsMock) -> None:
    api.get(OBS_URL, status=429, headers={"Retry-After": "1"})
    slept: list[float] = []
    with pytest.raises(ClientError, match="still 429"):
        client(slept).observation(OBS)
    assert len(slept) == MAX_RATE_LIMIT_WAITS


def test_401_is_an_error_naming_the_code(api: responses.RequestsMock) -> None:
    body = {"code": "UNAUTHORIZED", "message": "The token is invalid.", "request_id": "r"}
    api.get(OBS_URL, status=401, json=body)
    with pytest.raises(ClientError, match=r"401 UNAUTHORIZED: The token is invalid\."):
        client().observation(OBS)


def test_404_is_an_error_for_the_observation_asked_for_and_none_for_a_link(
    api: responses.RequestsMock,
) -> None:
    api.get(OBS_URL, status=404, json={"code": "NOT_FOUND", "message": "No observation."})
    with pytest.raises(ClientError, match="404 NOT_FOUND"):
        client().observation(OBS)
    assert client().observation(OBS, missing_ok=True) is None


def test_an_unreachable_api_is_an_error(api: responses.RequestsMock) -> None:
    api.get(OBS_URL, body=requests.exceptions.ConnectionError("refused"))
    with pytest.raises(ClientError, match="refused"):
        client().observation(OBS)


def test_a_body_that_is_not_json_is_an_error(api: responses.RequestsMock) -> None:
    api.get(OBS_URL, body=b"<html>proxy</html>")
    with pytest.raises(ClientError, match="not JSON"):
        client().observation(OBS)


def test_evidence_keeps_bytes_and_headers_exactly(api: responses.RequestsMock) -> None:
    api.get(
        f"{BASE}/v1/evidence/e", body=b"21/09/2026|3.356|3.364|\r\n", headers={"X-Sha256": "ab"}
    )
    answer = client().evidence("e")
    assert answer.body == b"21/09/2026|3.356|3.364|\r\n"
    assert answer.headers["X-Sha256"] == "ab"


def test_an_answer_missing_a_spec_field_is_exit_2_not_a_verdict(
    api: responses.RequestsMock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api.get(OBS_URL, body=orjson.dumps({"observacion": {"id": OBS}}))
    monkeypatch.setenv("FXEV_TOKEN", "fxev_secret")
    assert cli.main(["verify", OBS, "--url", BASE]) == 2
    captured = capsys.readouterr()
    assert "not shaped as the spec says" in captured.err
    assert captured.out == ""


@pytest.mark.parametrize(
    ("argv", "token", "message"),
    [
        (["verify", OBS, "--response", "f.json", "--url", BASE], "t", "not both"),
        (["verify", "--url", BASE], "t", "neither given"),
        (["verify", OBS, "--url", BASE], "", "FXEV_TOKEN"),
    ],
)
def test_usage_errors_exit_2_without_asking(
    api: responses.RequestsMock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    token: str,
    message: str,
) -> None:
    monkeypatch.setenv("FXEV_TOKEN", token)
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert len(api.calls) == 0


def test_an_answer_over_its_size_limit_is_an_error_not_read_whole(
    api: responses.RequestsMock,
) -> None:
    """A service sending far more than a checkpoint is refused once past the limit, not held
    in memory for as long as it keeps sending."""
    api.get(f"{BASE}/v1/log/checkpoint", body=b"x" * (CHECKPOINT_MAX + 1))
    with pytest.raises(ClientError, match=f"over {CHECKPOINT_MAX} bytes"):
        client().log("checkpoint")


def test_a_checkpoint_within_its_limit_is_read_whole(api: responses.RequestsMock) -> None:
    api.get(f"{BASE}/v1/log/checkpoint", body=b"x" * CHECKPOINT_MAX)
    assert client().log("checkpoint") == b"x" * CHECKPOINT_MAX


@pytest.mark.parametrize("retry_after", ["3601", "inf", "1e9"])
def test_a_retry_after_longer_than_a_minute_is_not_waited(
    api: responses.RequestsMock, retry_after: str
) -> None:
    """The minute's limit asks for a minute at most; a longer wait (the day's limit, or a
    hostile header) is an error at once (exit 2), never a sleep of hours or years."""
    api.get(OBS_URL, status=429, headers={"Retry-After": retry_after})
    slept: list[float] = []
    with pytest.raises(ClientError, match="not waited"):
        client(slept).observation(OBS)
    assert slept == []


def test_verify_reads_no_operator_setting(
    api: responses.RequestsMock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A consumer's machine may hold a malformed operator setting: `fxev verify` reads only
    FXEV_TOKEN and FXEV_LOG_VKEY, so it still asks (here, an answer lacking a spec field)."""
    api.get(OBS_URL, body=orjson.dumps({"observacion": {"id": OBS}}))
    monkeypatch.setenv("FXEV_TOKEN", "fxev_secret")
    monkeypatch.setenv("FXEV_PLAUSIBILITY_PCT", "abc")
    assert cli.main(["verify", OBS, "--url", BASE]) == 2
    assert "not shaped as the spec says" in capsys.readouterr().err
    assert len(api.calls) == 1
