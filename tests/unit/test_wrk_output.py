"""Parsing what ``wrk --latency`` prints (the gateway benchmark's load generator)."""

from __future__ import annotations

import pytest

from tests.support.wrk import WrkError, parse_wrk_output, wrk_command

# Printed by wrk 4.1.0 (Debian bookworm) against nginx on 127.0.0.1.
CLEAN = """\
Running 1s test @ http://127.0.0.1:37327/a
  1 threads and 2 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   398.71us  836.18us   7.20ms   90.89%
    Req/Sec    12.95k     5.83k   20.90k    60.00%
  Latency Distribution
     50%  124.00us
     75%  193.00us
     90%    1.06ms
     99%    4.24ms
  12894 requests in 1.00s, 3.00MB read
Requests/sec:  12882.03
Transfer/sec:      3.00MB
"""

WITH_ERRORS = """\
Running 5s test @ http://127.0.0.1:37327/missing
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    49.86ms   12.24ms    1.02s    84.05%
    Req/Sec   740.00     342.00     1.16k    60.00%
  Latency Distribution
     50%   40.00ms
     75%   51.30ms
     90%   82.78ms
     99%    1.50s
  7406 requests in 5.01s, 2.18MB read
  Socket errors: connect 0, read 3, write 1, timeout 2
  Non-2xx or 3xx responses: 7406
Requests/sec:   1478.20
Transfer/sec:    445.00KB
"""


def test_clean_run_gives_counts_rate_and_percentiles_in_seconds() -> None:
    result = parse_wrk_output(CLEAN)
    assert result.requests == 12894
    assert result.seconds == pytest.approx(1.0)
    assert result.rps == pytest.approx(12894.0)
    assert result.latency_s == pytest.approx({50: 124e-6, 75: 193e-6, 90: 1.06e-3, 99: 4.24e-3})
    assert (result.socket_errors, result.non_2xx_3xx) == (0, 0)


def test_errors_and_refused_answers_are_counted_and_units_mix() -> None:
    result = parse_wrk_output(WITH_ERRORS)
    assert result.seconds == pytest.approx(5.01)
    assert result.p99_s == pytest.approx(1.5)
    assert result.latency_s[50] == pytest.approx(0.040)
    assert result.socket_errors == 6
    assert result.non_2xx_3xx == 7406


def test_output_without_latency_distribution_is_refused() -> None:
    without = "\n".join(line for line in CLEAN.splitlines() if "%  " not in line)
    with pytest.raises(WrkError, match="latency"):
        parse_wrk_output(without)


def test_output_without_request_count_is_refused() -> None:
    with pytest.raises(WrkError, match="request count"):
        parse_wrk_output("unable to connect to 127.0.0.1:1 Connection refused\n")


def test_command_is_bounded_in_time_and_never_has_more_threads_than_connections() -> None:
    command = wrk_command("http://127.0.0.1:1/x", 5, 1, 2, {"Authorization": "Bearer t"})
    assert command[:4] == ["wrk", "-t1", "-c1", "-d5s"]
    assert command[-3:-1] == ["-H", "Authorization: Bearer t"]
