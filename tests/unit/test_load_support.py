"""Pure parts of the gateway benchmark (``tests.support``): nginx's configuration, the best of
noisy runs and their spread."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.nginx import nginx_config, proxy_config
from tests.support.wrk import Measurement, WrkResult, best, spread


def test_nginx_serves_the_folder_on_loopback_in_the_foreground_without_logs() -> None:
    config = nginx_config(Path("/t/ng"), Path("/t/root"), 8123, 2, as_root=False)
    assert "listen 127.0.0.1:8123;" in config
    assert "root /t/root;" in config
    assert "worker_processes 2;" in config
    assert "daemon off;" in config and "access_log off;" in config
    assert "pid /t/ng/nginx.pid;" in config
    assert "user " not in config
    assert config.count("{") == config.count("}")


def test_nginx_runs_its_workers_as_root_only_when_started_by_root() -> None:
    config = nginx_config(Path("/t/ng"), Path("/t/root"), 8123, 2, as_root=True)
    assert config.startswith("user root;\n")


def test_the_plain_proxy_passes_everything_to_its_upstream_over_kept_connections() -> None:
    config = proxy_config(Path("/t/px"), "127.0.0.1:9001", 8124, 2, as_root=False)
    assert "listen 127.0.0.1:8124;" in config
    assert "server 127.0.0.1:9001;" in config and "keepalive 64;" in config
    assert "proxy_pass http://origin;" in config and "proxy_http_version 1.1;" in config
    assert "proxy_cache" not in config and "root " not in config
    assert "daemon off;" in config and "pid /t/px/nginx.pid;" in config
    assert config.count("{") == config.count("}")


def run(rps: float, p99_s: float) -> WrkResult:
    return WrkResult(int(rps * 5), 5.0, {50: p99_s / 2, 99: p99_s}, 0, 0)


def test_best_takes_the_fastest_run_with_its_cpu_and_the_calmest_p99() -> None:
    noisy = Measurement(run(900, 0.002), 500.0, run(300, 0.030))
    calm = Measurement(run(1200, 0.010), 400.0, run(350, 0.004))
    chosen = best([noisy, calm])
    assert chosen.throughput.rps == 1200 and chosen.cpu_us_per_request == 400.0
    assert chosen.latency.p99_s == 0.004


def test_spread_gives_the_best_and_the_range_of_repeated_figures() -> None:
    assert spread([8758.4, 9357.2]) == "9,357 (8,758-9,357)"
    assert spread([0.0021, 0.0019, 0.0045], ".4f", best=min) == "0.0019 (0.0019-0.0045)"
    assert spread([0.26], ".2f") == "0.26"  # one run: no range to give


def test_spread_of_no_figures_is_refused() -> None:
    with pytest.raises(ValueError, match="no figures"):
        spread([])
